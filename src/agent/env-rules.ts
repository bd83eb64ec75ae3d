/**
 * Which environment variables a pool agent never takes from a submission, and which of its own
 * it never hands its workers. Pure rules on names.
 *
 * Refused from a submission whatever `--allow-env` says, because each one makes some program
 * in the worker run code from elsewhere: the interpreter (PYTHON*), the dynamic loader (LD_*,
 * DYLD_*), the shell, or a library the script uses (NCCL plugins, wandb's internal settings,
 * compiled-kernel caches, Hugging Face's remote-code modules, git hooks and commands). A glob
 * such as `WANDB_*` or `*` matches these too; exact names are the safe way to allow variables.
 */

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Name prefixes refused from a submission, each with why. */
const REFUSED_PREFIXES: readonly (readonly [string, string])[] = [
  ['PYTHON', 'Python reads PYTHON* variables as its own settings (search path, bytecode cache, startup code)'],
  ['LD_', 'the dynamic loader reads LD_* variables (libraries to preload or search)'],
  ['DYLD_', 'the dynamic loader reads DYLD_* variables (libraries to insert or search)'],
  ['TELASTIC_', 'telastic sets TELASTIC_* variables itself'],
  ['TORCHELASTIC_', 'telastic sets TORCHELASTIC_* variables itself, as torchrun does'],
  ['WANDB__', "wandb's internal settings (WANDB__EXECUTABLE is the program it starts)"],
  ['PYENV_', "pyenv's shims (a python3 on PATH may be one) run the interpreter and hooks PYENV_* variables point to"],
  ['GIT_', 'git runs programs and reads configuration GIT_* variables name, and libraries (wandb) call git'],
];

/** Exact names refused from a submission, each with why. */
const REFUSED_NAMES: Readonly<Record<string, string>> = {
  ...names('it picks the interpreter or the programs and files the shell finds', ['PYTHON_EXEC', 'PATH', 'HOME', 'XDG_CONFIG_HOME']),
  ...names('a shell or Node runs code it names', ['NODE_OPTIONS', 'NODE_PATH', 'BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4']),
  ...names('it makes the C library or OpenSSL load modules from a path it names', ['GCONV_PATH', 'OPENSSL_CONF', 'OPENSSL_ENGINES', 'OPENSSL_MODULES']),
  ...names('NCCL loads a plugin library (or a config naming one) from it', ['NCCL_NET_PLUGIN', 'NCCL_TUNER_PLUGIN', 'NCCL_PROFILER_PLUGIN', 'NCCL_ENV_PLUGIN', 'NCCL_CONF_FILE']),
  ...names('CUDA or NVTX loads the library it names into the process', ['CUDA_INJECTION64_PATH', 'NVTX_INJECTION64_PATH', 'NVTX_INJECTION32_PATH']),
  ...names('OpenMP loads the tool libraries it names', ['OMP_TOOL_LIBRARIES']),
  ...names('a cache of compiled code that is loaded and run', ['TORCH_EXTENSIONS_DIR', 'TORCHINDUCTOR_CACHE_DIR', 'PYTORCH_KERNEL_CACHE_PATH', 'TRITON_CACHE_DIR', 'TRITON_HOME', 'TRITON_OVERRIDE_DIR', 'CUDA_CACHE_PATH']),
  ...names('Triton runs or loads the program or library it names', ['TRITON_PTXAS_PATH', 'TRITON_CUOBJDUMP_PATH', 'TRITON_NVDISASM_PATH', 'TRITON_LIBCUDA_PATH']),
  ...names('torch.hub runs hubconf.py from the cache it names', ['TORCH_HOME']),
  ...names('Hugging Face imports remote code (and unpickles files) from the cache it names', ['HF_HOME', 'HF_MODULES_CACHE', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'TRANSFORMERS_CACHE', 'HF_DATASETS_CACHE']),
  ...names('IPython runs the startup files of the directory it names', ['IPYTHONDIR']),
  ...names('another interpreter the script may start loads code it names', ['PERL5LIB', 'PERL5OPT', 'RUBYLIB', 'RUBYOPT', 'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS']),
};

function names(why: string, list: string[]): Record<string, string> {
  return Object.fromEntries(list.map((n) => [n, why]));
}

/** Every exact name refused from a submission (README, tests). */
export const NEVER_FROM_SUBMITTER: readonly string[] = Object.keys(REFUSED_NAMES);
/** Every name prefix refused from a submission. */
export const NEVER_FROM_SUBMITTER_PREFIXES: readonly string[] = REFUSED_PREFIXES.map(([p]) => p);

/** Why a submitted variable `name` is never taken, whatever `--allow-env` says; null when it may be. */
export function refusedEnvName(name: string): string | null {
  const exact = REFUSED_NAMES[name];
  if (exact !== undefined) return exact;
  return REFUSED_PREFIXES.find(([prefix]) => name.startsWith(prefix))?.[1] ?? null;
}

/**
 * The agent's own variables its workers do not inherit on a pool agent: its Temporal connection
 * (TEMPORAL_API_KEY, TLS key paths), its key files (TELASTIC_ENCRYPTION_KEY_FILE) and the rest of
 * its own settings (telastic gives workers their TELASTIC_* variables itself), and the ledger's
 * database password. `--pass-env NAME` keeps a named one.
 */
export function isAgentOnly(name: string): boolean {
  return name.startsWith('TEMPORAL_') || name.startsWith('TELASTIC_') || name === 'PGPASSWORD' || name === 'PGPASSFILE';
}
