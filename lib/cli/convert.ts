import { pipeline } from 'node:stream/promises';
import type { FrameError } from '../errors.js';
import { FRAMING_NAMES, isFramingName, type FramingName } from '../framings/index.js';
import { FrameConverter } from '../streams.js';
import { CliError, EXIT, parseOptions, positiveInteger } from './io.js';

export const USAGE = `usage: mcp-frame convert --from <framing> --to <framing> [--skip-invalid] [--validate] [--max-message-bytes n]
framings: ${FRAMING_NAMES.join(', ')}`;

interface ConvertArgs {
  from: FramingName;
  to: FramingName;
  skipInvalid: boolean;
  validate: boolean;
  maxMessageBytes: number | undefined;
}

export function parseConvertArgs(args: string[]): ConvertArgs {
  const { values, positionals } = parseOptions(
    args,
    {
      from: { type: 'string' },
      to: { type: 'string' },
      'skip-invalid': { type: 'boolean', default: false },
      validate: { type: 'boolean', default: false },
      'max-message-bytes': { type: 'string' },
      // The older spelling, kept: serve's name is the one shown.
      'max-bytes': { type: 'string' },
    },
    USAGE,
  );
  if (positionals.length > 0) throw new CliError(`unexpected argument ${positionals[0]}\n${USAGE}`, EXIT.usage);
  for (const flag of ['from', 'to'] as const) {
    const name = values[flag] as string | undefined;
    if (name === undefined) throw new CliError(`--${flag} is required\n${USAGE}`, EXIT.usage);
    if (!isFramingName(name)) throw new CliError(`--${flag}: unknown framing ${JSON.stringify(name)}\n${USAGE}`, EXIT.usage);
  }
  return {
    from: values.from as FramingName,
    to: values.to as FramingName,
    skipInvalid: values['skip-invalid'] === true,
    validate: values.validate === true,
    maxMessageBytes:
      values['max-message-bytes'] !== undefined
        ? positiveInteger(values['max-message-bytes'], '--max-message-bytes', USAGE)
        : positiveInteger(values['max-bytes'], '--max-bytes', USAGE),
  };
}

const describe = (err: FrameError): string => `${err.code}: ${err.message}${err.preview ? `: ${err.preview}` : ''}`;

/** `mcp-frame convert --from <framing> --to <framing>`: re-frames stdin to stdout, streaming. */
export async function convertCommand(args: string[]): Promise<void> {
  const opts = parseConvertArgs(args);
  const converter = new FrameConverter({
    framing: opts.from,
    to: opts.to,
    onInvalid: opts.skipInvalid ? 'skip' : 'error',
    validate: opts.validate,
    ...(opts.maxMessageBytes === undefined ? {} : { maxMessageBytes: opts.maxMessageBytes }),
  });
  converter.on('invalid', (err: FrameError) => process.stderr.write(`mcp-frame convert: skipped ${describe(err)}\n`));
  try {
    await pipeline(process.stdin, converter, process.stdout);
  } catch (err) {
    // A reader that went away (`| head`) is not a failure of the conversion.
    if ((err as NodeJS.ErrnoException).code === 'EPIPE') return;
    if ((err as FrameError).name === 'FrameError') throw new CliError(describe(err as FrameError));
    throw err;
  }
}
