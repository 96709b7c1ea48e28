import { type FrameError, preview, printable, printableJson } from '../errors.js';
import type { DecodeSink } from '../framings/codec.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE_BYTES, framingByName, type FramingName } from '../framings/index.js';
import { jsonRpcProblem } from '../jsonrpc.js';
import { NdjsonDecoder } from '../framings/ndjson.js';
import { CassetteError, type CassetteEvent, isCassetteEvent, NOT_AN_EVENT, type Side } from './cassette.js';

/** Where in a capture something is: the message's number (bad frames counted too) and its byte offset. */
export interface CapturePosition {
  message: number;
  offset?: number;
  line?: number;
  /** In a cassette: who sent it. */
  from?: Side;
}

export interface CheckProblem extends CapturePosition {
  code: string;
  text: string;
  preview: string;
}

export interface CheckReport {
  /** `'cassette'` for a recorded session, otherwise the framing read. */
  format: FramingName | 'cassette';
  bytes: number;
  /** Frames that decoded, a batch counting once. */
  messages: number;
  requests: number;
  notifications: number;
  /** Responses with a result. */
  responses: number;
  /** Responses with an error. */
  errors: number;
  batches: number;
  /** Every framing or JSON-RPC error, with its position. */
  problems: CheckProblem[];
  /** The largest message, by the bytes of its compact JSON. */
  largest: (CapturePosition & { bytes: number }) | undefined;
  crlf: boolean;
  bom: boolean;
  unmatchedResponses: Array<CapturePosition & { id: unknown }>;
  unansweredRequests: Array<CapturePosition & { id: unknown; method: string }>;
  /** No problem, no unmatched response, no unanswered request. CRLF and a BOM are reported, not failed. */
  ok: boolean;
}

type Obj = Record<string, unknown>;

/** Tallies messages and pairs requests with responses, per side (one side for a plain stream). */
class Tally {
  readonly report: CheckReport;
  readonly #pending = new Map<string, CapturePosition & { id: unknown; method: string }>();

  constructor(format: CheckReport['format']) {
    this.report = {
      format,
      bytes: 0,
      messages: 0,
      requests: 0,
      notifications: 0,
      responses: 0,
      errors: 0,
      batches: 0,
      problems: [],
      largest: undefined,
      crlf: false,
      bom: false,
      unmatchedResponses: [],
      unansweredRequests: [],
      ok: true,
    };
  }

  /** A frame that decoded: count it, check it, and pair it. */
  frame(msg: unknown, at: CapturePosition): void {
    const r = this.report;
    r.messages++;
    const bytes = Buffer.byteLength(JSON.stringify(msg));
    if (r.largest === undefined || bytes > r.largest.bytes) r.largest = { ...at, bytes };
    const elements = Array.isArray(msg) ? msg : [msg];
    if (Array.isArray(msg)) {
      r.batches++;
      if (msg.length === 0) this.problem({ ...at, code: 'INVALID_MESSAGE', text: 'not a JSON-RPC 2.0 message: an empty batch', preview: '[]' });
    }
    for (const element of elements) {
      const problem = jsonRpcProblem(element);
      if (problem !== undefined) {
        this.problem({ ...at, code: 'INVALID_MESSAGE', text: `not a JSON-RPC 2.0 message: ${problem}`, preview: preview(JSON.stringify(element)) });
        continue;
      }
      this.#pair(element as Obj, at);
    }
  }

  problem(p: CheckProblem): void {
    this.report.problems.push(p);
  }

  #pair(msg: Obj, at: CapturePosition): void {
    const r = this.report;
    // A request is answered by the other side; in a plain stream there is only one side.
    const key = (from: Side | undefined, id: unknown): string => `${from ?? ''} ${JSON.stringify(id)}`;
    if (typeof msg.method === 'string') {
      if (!('id' in msg)) {
        r.notifications++;
        return;
      }
      r.requests++;
      this.#pending.set(key(at.from, msg.id), { ...at, id: msg.id, method: msg.method });
      return;
    }
    if ('error' in msg) r.errors++;
    else r.responses++;
    const other = at.from === undefined ? undefined : at.from === 'client' ? 'server' : 'client';
    const k = key(other, msg.id);
    if (this.#pending.has(k)) this.#pending.delete(k);
    else r.unmatchedResponses.push({ ...at, id: msg.id });
  }

  finish(): CheckReport {
    const r = this.report;
    r.unansweredRequests = [...this.#pending.values()];
    r.ok = r.problems.length === 0 && r.unmatchedResponses.length === 0 && r.unansweredRequests.length === 0;
    return r;
  }
}

const problemOf = (err: FrameError, message: number): CheckProblem => {
  const p: CheckProblem = { message, code: err.code, text: err.reason, preview: err.preview };
  if (err.offset !== undefined) p.offset = err.offset;
  if (err.line !== undefined) p.line = err.line;
  return p;
};

/** Reads a captured stream in one framing and reports on it; memory is bounded by the largest message. */
export async function checkStream(source: AsyncIterable<Buffer | string>, framing: FramingName = 'ndjson'): Promise<CheckReport> {
  const tally = new Tally(framing);
  const core = framingByName(framing).createDecoder({ maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
  let n = 0;
  const sink: DecodeSink = {
    textUnused: true,
    message: (msg) => {
      const pos = core.lastPosition();
      const at: CapturePosition = { message: ++n };
      if (pos.offset !== undefined) at.offset = pos.offset;
      if (pos.line !== undefined) at.line = pos.line;
      tally.frame(msg, at);
    },
    invalid: (err) => {
      tally.problem(problemOf(err, ++n));
      return true;
    },
  };
  let lastByte = -1;
  // The first three bytes, which may come in more than one chunk, tell whether there is a BOM.
  let start = Buffer.alloc(0);
  const r = tally.report;
  for await (const piece of source) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
    if (chunk.length === 0) continue;
    if (start.length < 3) {
      start = Buffer.concat([start, chunk.subarray(0, 3 - start.length)]);
      if (start.length === 3) r.bom = start[0] === 0xef && start[1] === 0xbb && start[2] === 0xbf;
    }
    // Content-Length headers end in CRLF by that framing's own rule: nothing to note there.
    if (framing !== 'content-length' && !r.crlf && ((lastByte === 0x0d && chunk[0] === 0x0a) || chunk.includes('\r\n'))) r.crlf = true;
    lastByte = chunk[chunk.length - 1]!;
    r.bytes += chunk.length;
    core.write(chunk, sink);
  }
  core.end(sink);
  return tally.finish();
}

/** Reports on a recorded session, pairing each side's requests with the other side's responses. */
export function checkCassette(events: readonly CassetteEvent[]): CheckReport {
  const tally = new Tally('cassette');
  events.forEach((event, i) => {
    tallyEvent(tally, event, i + 1, Buffer.byteLength(JSON.stringify(event)) + 1);
  });
  return tally.finish();
}

function tallyEvent(tally: Tally, event: CassetteEvent, n: number, bytes: number): void {
  const at: CapturePosition = { message: n, line: n, from: event.from };
  tally.report.bytes += bytes;
  if ('msg' in event) tally.frame(event.msg, at);
  else tally.problem({ ...at, code: event.code, text: 'recorded as not a valid frame', preview: event.invalid });
}

/**
 * As checkCassette, reading the cassette as it streams: memory is bounded by the largest line and the requests
 * still unanswered, not by the file. A line that is not a cassette event is a CassetteError naming it.
 */
export async function checkCassetteStream(source: AsyncIterable<Buffer | string>, file = 'cassette'): Promise<CheckReport> {
  const tally = new Tally('cassette');
  // The event wraps its message in one more level.
  const core = new NdjsonDecoder({ maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, maxDepth: DEFAULT_MAX_DEPTH + 1 });
  let failure: CassetteError | undefined;
  let n = 0;
  const sink: DecodeSink = {
    message: (value, text) => {
      const line = core.lastPosition().line!;
      if (!isCassetteEvent(value)) failure ??= new CassetteError(file, line, NOT_AN_EVENT);
      else tallyEvent(tally, value, ++n, Buffer.byteLength(text) + 1);
    },
    invalid: (err) => {
      failure ??= err.code === 'INVALID_JSON' ? new CassetteError(file, err.line, 'not JSON') : new CassetteError(file, err.line, err.reason);
      return false;
    },
  };
  for await (const piece of source) {
    core.write(typeof piece === 'string' ? Buffer.from(piece) : piece, sink);
    if (failure !== undefined) throw failure;
  }
  core.end(sink);
  if (failure !== undefined) throw failure;
  return tally.finish();
}

function where(p: CapturePosition): string {
  const parts = [`message ${p.message}`];
  if (p.from !== undefined) parts.push(`from the ${p.from}`);
  if (p.line !== undefined) parts.push(`line ${p.line}`);
  if (p.offset !== undefined) parts.push(`byte ${p.offset}`);
  return parts.join(', ');
}

/** `1 request`, `2 requests`, `0 requests`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** How many findings of one kind the text report lists. */
const REPORT_CAP = 20;

/** The report as text for a person, one finding a line. */
export function formatReport(r: CheckReport): string {
  const out: string[] = [];
  out.push(
    `${r.format}, ${count(r.bytes, 'byte')}: ${count(r.messages, 'message')} (${count(r.requests, 'request')}, ${count(r.notifications, 'notification')}, ${count(r.responses, 'response')}, ${count(r.errors, 'error response')}${r.batches > 0 ? `; ${`${r.batches} batch${r.batches === 1 ? '' : 'es'}`}` : ''})`,
  );
  if (r.largest) out.push(`largest message: ${count(r.largest.bytes, 'byte')} (${where(r.largest)})`);
  if (r.crlf) out.push('note: CRLF line ends seen');
  if (r.bom) out.push('note: the stream starts with a UTF-8 BOM');
  // Each kind of finding listed up to REPORT_CAP times (--json has them all), then how many more.
  const listed = <T>(items: T[], line: (item: T) => string, what: string): void => {
    for (const item of items.slice(0, REPORT_CAP)) out.push(line(item));
    const more = items.length - REPORT_CAP;
    if (more > 0) out.push(`... and ${more} more ${what}${more === 1 ? '' : 's'} (--json lists every one)`);
  };
  listed(r.problems, (p) => `error: ${p.code} at ${where(p)}: ${p.text}${p.preview ? `: ${p.preview}` : ''}`, 'error');
  // Ids and methods come from the capture: escaped, so that they cannot drive the terminal.
  listed(r.unmatchedResponses, (u) => `error: response with id ${printableJson(u.id)} matches no request (${where(u)})`, 'unmatched response');
  listed(
    r.unansweredRequests,
    (u) => `error: request ${printable(u.method)} with id ${printableJson(u.id)} was never answered (${where(u)})`,
    'unanswered request',
  );
  out.push(
    r.ok
      ? 'ok'
      : `not ok: ${count(r.problems.length, 'error')}, ${count(r.unmatchedResponses.length, 'unmatched response')}, ${count(r.unansweredRequests.length, 'unanswered request')}`,
  );
  return `${out.join('\n')}\n`;
}
