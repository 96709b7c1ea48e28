/* The HTTP front room: the guard (Host, Origin, token), and the front that routes each request to its endpoint. */
export { type FrontParts, HttpFront } from './front.js';
export { Guard } from './guard.js';
export { CallLimits } from './rates.js';
export { countingResponse, listenHttp } from './listen.js';
