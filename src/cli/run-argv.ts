/**
 * Split `telastic run` argv with commander: options up to SCRIPT (or `--`), then SCRIPT and its
 * arguments untouched, even ones that look like our flags. Then read each flag as torchrun's
 * argparse `env`/`check_env` actions do: the flag if given, else its `PET_*` variable.
 */
import { CommanderError, type Command, type Option } from 'commander';
import { HelpRequested, UsageError } from './errors';
import { createRunCommand, petName, TELASTIC_FLAGS, TORCHRUN_FLAGS, type RunFlag } from './run-command';
import { parseValue, petSwitchSchema, type RawValue } from '../config/values';
import type { ConnectionFlagValues } from './connection-options';

export interface RunArgv {
  script: string | undefined;
  args: string[];
  /** The flag's value (or `PET_*` variable's), with where it came from; absent if neither. */
  value(name: string): RawValue | undefined;
  /** A switch: on if given, else `PET_*` as `bool(int(value))`; `from` says who turned it on. */
  switch(name: string): RawValue | undefined;
  /** Whether the flag itself was on the command line. */
  given(name: string): boolean;
  connection: ConnectionFlagValues;
}

const FLAGS = new Map<string, RunFlag>([...TORCHRUN_FLAGS, ...TELASTIC_FLAGS].map((f) => [f.name, f]));

function parse(cmd: Command, argv: string[]) {
  try {
    return cmd.parseOptions([...argv]);
  } catch (err) {
    // The only way a known option lacks its value: it is the last word of argv.
    if (err instanceof CommanderError && err.code === 'commander.optionMissingArgument') {
      const last = argv[argv.length - 1] ?? '';
      throw new UsageError(`${last}: expected a value`, last);
    }
    throw err;
  }
}

function rejectUnknown(cmd: Command, arg: string): never {
  if (arg === '-h' || arg === '--help') throw new HelpRequested(cmd.helpInformation().replace(/^Usage: run /, 'Usage: telastic run '));
  const name = arg.split('=')[0] ?? arg;
  if (arg.includes('=') && cmd.options.some((o) => (o.long === name || o.short === name) && o.isBoolean())) {
    throw new UsageError(`${arg}: ${name} takes no value`, name, arg.slice(name.length + 1));
  }
  throw new UsageError(`unknown option ${arg}`, arg);
}

export function splitRunArgv(argv: string[], env: NodeJS.ProcessEnv): RunArgv {
  const cmd = createRunCommand();
  const { operands, unknown } = parse(cmd, argv);
  if (unknown[0] !== undefined) rejectUnknown(cmd, unknown[0]);

  const option = (name: string): Option => {
    const o = cmd.options.find((x) => x.long === `--${name}`);
    if (!o) throw new Error(`telastic run has no option --${name}`);
    return o;
  };
  const given = (name: string) => cmd.getOptionValueSource(option(name).attributeName()) === 'cli';
  const fromEnv = (name: string): RawValue | undefined => {
    const f = FLAGS.get(name);
    const raw = f?.pet ? env[petName(f)] : undefined;
    return f && raw !== undefined && raw !== '' ? { raw, from: petName(f) } : undefined;
  };

  const opts = cmd.opts<ConnectionFlagValues>();
  return {
    script: operands[0],
    args: operands.slice(1),
    given,
    value: (name) =>
      given(name) ? { raw: String(cmd.getOptionValue(option(name).attributeName())), from: `--${name}` } : fromEnv(name),
    switch: (name) => {
      if (given(name)) return { raw: '1', from: `--${name}` };
      const v = fromEnv(name);
      return v && parseValue(petSwitchSchema, v) ? v : undefined;
    },
    connection: {
      address: opts.address,
      namespace: opts.namespace,
      tls: opts.tls,
      tlsCertPath: opts.tlsCertPath,
      tlsKeyPath: opts.tlsKeyPath,
      tlsCaPath: opts.tlsCaPath,
      tlsServerName: opts.tlsServerName,
      apiKey: opts.apiKey,
      encryptionKeyFile: opts.encryptionKeyFile,
      acceptUnsealed: opts.acceptUnsealed,
    },
  };
}
