import type { FrameError } from '../../lib/errors.js';
import type { FramedEvent, FrameDecoderCore } from '../../lib/framings/codec.js';
import { FrameDecoder, type FrameDecoderOptions } from '../../lib/streams.js';

/** What a decoder reported, in order: messages, and bad frames as their code and position. */
export type DecodeEvent =
  | { message: unknown }
  | { invalid: { code: string; line?: number; offset?: number; index?: number } }
  | { event: FramedEvent };

/** A FrameError as its code and the position fields it has. */
export function invalidEvent(err: FrameError): DecodeEvent {
  const invalid: { code: string; line?: number; offset?: number; index?: number } = { code: err.code };
  if (err.index !== undefined) invalid.index = err.index;
  if (err.line !== undefined) invalid.line = err.line;
  if (err.offset !== undefined) invalid.offset = err.offset;
  return { invalid };
}

/** Runs chunks through a pure decoder core, skipping bad frames. */
export function decodeWithCore(core: FrameDecoderCore, chunks: readonly Uint8Array[]): DecodeEvent[] {
  const events: DecodeEvent[] = [];
  const sink = {
    message: (message: unknown) => void events.push({ message }),
    invalid: (err: FrameError) => {
      events.push(invalidEvent(err));
      return true;
    },
    event: (event: FramedEvent) => void events.push({ event }),
  };
  for (const chunk of chunks) core.write(chunk, sink);
  core.end(sink);
  return events;
}

export interface StreamOutcome {
  events: DecodeEvent[];
  /** The error the stream failed with, if it did. */
  error: unknown;
}

/** Writes chunks into a FrameDecoder and collects what comes out until it ends or fails. */
export function decodeWithStream(chunks: readonly Uint8Array[], options: FrameDecoderOptions = {}): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    const decoder = new FrameDecoder(options);
    const events: DecodeEvent[] = [];
    decoder.on('data', (message: unknown) => events.push({ message }));
    decoder.on('invalid', (err: FrameError) => events.push(invalidEvent(err)));
    decoder.on('event', (event: FramedEvent) => events.push({ event }));
    decoder.on('end', () => resolve({ events, error: undefined }));
    decoder.on('error', (error) => resolve({ events, error }));
    for (const chunk of chunks) {
      if (decoder.destroyed) break;
      decoder.write(chunk);
    }
    if (!decoder.destroyed) decoder.end();
  });
}
