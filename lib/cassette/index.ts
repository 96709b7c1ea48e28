/*
 * mcp-frame/cassette: record sessions, replay them as a server, and check captured streams.
 */
export {
  Cassette,
  CassetteWriter,
  CassetteError,
  RecordingTap,
  Replayer,
  replayStream,
  parseCassette,
  REPLAY_NOT_RECORDED,
  type CassetteEvent,
  type EventRecorder,
  type ReplayOptions,
  type Side,
} from './cassette.js';
export { checkStream, checkCassette, formatReport, type CheckReport, type CheckProblem, type CapturePosition } from './check.js';
