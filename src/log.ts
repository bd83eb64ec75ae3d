/**
 * The one logger: pino to stderr (stdout belongs to the workers' output), human-readable
 * lines unless TELASTIC_LOG_FORMAT=json.
 */
import pino from 'pino';
import pretty from 'pino-pretty';

const level = process.env.TELASTIC_LOG_LEVEL ?? 'info';
const json = process.env.TELASTIC_LOG_FORMAT === 'json';

export const log = json
  ? pino({ level, base: undefined }, pino.destination({ fd: 2, sync: true }))
  : pino(
      { level, base: undefined },
      pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY, ignore: 'pid,hostname,job,node', translateTime: 'HH:MM:ss.l', messageFormat: 'telastic {node}: {msg}', singleLine: true }),
    );
export type Logger = typeof log;
