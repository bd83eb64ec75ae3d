/**
 * `telastic operator`: the Kubernetes operator of TelasticJobs (src/operator/), and by default a
 * control-queue worker too, so that the operator's Deployment hosts the job workflows its pods
 * (`telastic run --no-coordinator`) join. Every replica serves the control queue (any of them
 * replays a job); only the one holding the Lease reconciles. `--no-control-worker` when a
 * separate `telastic controller` Deployment serves the queue.
 */
import os from 'node:os';
import { Option, type Command } from 'commander';
import { startController, type Controller } from '../controller';
import { log } from '../log';
import { connect, connectNative, waitForNamespace, type Wait } from '../temporal/connect';
import { sealingFor } from '../temporal/data-converter';
import { parseValue, durationToMs } from '../config/values';
import { defaultLedgerDir, ledgerToHost } from '../ledger/connect';
import { addConnectionOptions, compileConnectionOptions, type ConnectionFlagValues } from './connection-options';
import { addMetricsOptions, compileMetricsOptions, type MetricsFlagValues } from './metrics-options';
import { openMetrics } from '../metrics/endpoint';
import { watchControl } from '../metrics/control';
import { installRuntime } from './run';
import { DEFAULT_LEASE_TIMING } from '../operator/lease';

interface OperatorFlags extends ConnectionFlagValues, MetricsFlagValues {
  taskQueue: string;
  watchNamespace?: string;
  leaseNamespace?: string;
  leaseName: string;
  identity?: string;
  podAddress?: string;
  podEnvSecret?: string;
  podServiceAccount?: string;
  controlWorker: boolean;
  resync: string;
}

export function registerOperatorCommand(program: Command): void {
  const cmd = program
    .command('operator')
    .description('run the Kubernetes operator of TelasticJobs in the foreground (docs/kubernetes.md); leader-elected with a Lease')
    .option('--task-queue <name>', 'control task queue', 'telastic')
    .addOption(new Option('--watch-namespace <ns>', 'only TelasticJobs of this namespace (default: every namespace)'))
    .addOption(new Option('--lease-namespace <ns>', 'namespace of the Lease (env POD_NAMESPACE, default "default")'))
    .option('--lease-name <name>', 'name of the Lease the replicas elect a leader with', 'telastic-operator')
    .addOption(new Option('--identity <id>', "this replica's name in the Lease (env POD_NAME, default HOST-PID)"))
    .addOption(new Option('--pod-address <host:port>', "the Temporal frontend as the job's pods reach it (default: --address)"))
    .addOption(new Option('--pod-env-secret <name>', "a Secret every job pod takes its environment from (TEMPORAL_TLS_*, TEMPORAL_API_KEY…)"))
    .addOption(new Option('--pod-service-account <name>', 'the service account of job pods (default: none mounted)'))
    .option('--no-control-worker', 'host no job workflows here (a telastic controller serves the control queue)')
    .option('--resync <duration>', 'how often every job is reconciled without a watch event (also how fresh .status is)', '5s');
  addMetricsOptions(addConnectionOptions(cmd)).action(async (flags: OperatorFlags) => operator(flags));
}

async function operator(flags: OperatorFlags): Promise<void> {
  const co = compileConnectionOptions(flags, process.env);
  const resyncMs = parseValue(durationToMs, { raw: flags.resync, from: '--resync' });
  const metricsOptions = compileMetricsOptions(flags, process.env);
  const say = (line: string) => console.error(`telastic operator: ${line}`);
  // Loaded here only: the client is an ES module, and no other command needs it.
  const k8s = await import('@kubernetes/client-node');
  const { Kube } = await import('../operator/kube');
  const { runOperator } = await import('../operator/loop');
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault(); // in a pod: its service account; else KUBECONFIG or ~/.kube/config
  const sealing = await sealingFor(co);
  const endpoint = await openMetrics(metricsOptions, say);
  installRuntime(endpoint?.sdkBindAddress);
  const stop = new AbortController();
  const abort = () => stop.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  const wait: Wait = { patienceMs: Infinity, signal: stop.signal };
  const native = await connectNative(co, wait);
  await waitForNamespace(native, co, wait);
  const connection = await connect(co, wait);
  let controller: Controller | undefined;
  if (flags.controlWorker) {
    // The ledger only with a database the replicas share: an embedded one per replica would split it.
    const ledger = process.env.DATABASE_URL ? await ledgerToHost(process.env, defaultLedgerDir(process.env), say) : undefined;
    controller = await startController(native, co.namespace, flags.taskQueue, ledger, sealing.dataConverter);
  }
  const watch = endpoint && watchControl(endpoint, { native, connection, namespace: co.namespace, dataConverter: sealing.dataConverter, workers: controller?.workers ?? [] });
  const identity = flags.identity ?? process.env.POD_NAME ?? `${os.hostname()}-${process.pid}`;
  const leaseNamespace = flags.leaseNamespace ?? process.env.POD_NAMESPACE ?? 'default';
  say(`${identity}: watching TelasticJobs in ${flags.watchNamespace ?? 'every namespace'} on ${kc.getCurrentCluster()?.server ?? 'the cluster'}; Temporal ${co.address} (${co.namespace})${controller ? `, serving ${flags.taskQueue}` : ''}`);
  try {
    await runOperator({
      kube: new Kube(kc, flags.watchNamespace),
      temporal: { connection, namespace: co.namespace, taskQueue: flags.taskQueue, dataConverter: sealing.dataConverter },
      pods: { temporalAddress: flags.podAddress ?? co.address, temporalNamespace: co.namespace, taskQueue: flags.taskQueue, envFromSecret: flags.podEnvSecret, serviceAccountName: flags.podServiceAccount },
      identity,
      lease: { namespace: leaseNamespace, name: flags.leaseName, timing: DEFAULT_LEASE_TIMING },
      resyncMs,
      log,
      signal: stop.signal,
    });
  } finally {
    await controller?.shutdown();
    await watch?.stop();
    await connection.close();
    await endpoint?.close();
    await native.close();
  }
}
