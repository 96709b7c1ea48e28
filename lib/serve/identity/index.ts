/* The identity room: serve as an OAuth 2.1 resource server (RFC 9728 metadata, JWTs and introspection, step-up). */
export { type Authentication, loadJose, ResourceServer, type ResourceServerOptions } from './resource-server.js';
