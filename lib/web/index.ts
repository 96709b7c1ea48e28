/*
 * mcp-frame/web: the framing on Web Streams, for any runtime (see streams.ts). Nothing it reaches uses a node:
 * module or a Node global.
 */
export { FrameError, type FrameErrorCode } from '../errors.js';
export { FrameDecoderStream, type FrameDecoderStreamOptions, FrameEncoderStream, frame, type WebFraming } from './streams.js';
