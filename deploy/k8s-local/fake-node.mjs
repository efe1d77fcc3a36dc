#!/usr/bin/env node
// A fake node for the local control plane (there is no kwok or container runtime here): it
// registers a Node, keeps its Lease and Ready condition fresh, and acts for a kubelet on the pods
// the scheduler binds to it:
//   - a pod that restarts (restartPolicy Always) is reported Running and Ready at once;
//   - a run-once pod (Never / OnFailure: Jobs, helm test hooks) is reported Succeeded, exit 0;
//   - a pod being deleted is removed at once (a kubelet would stop its containers first).
// No container runs and no probe is executed: what passes here is what the API server, the
// controllers and helm accept and do, not that the image works (docs/k8s-testing.md).
// Usage: K8S_WORK=<up.sh work dir> node fake-node.mjs   (up.sh starts it)
import { connect, KubeError } from './kube.mjs';

const kube = connect(process.env.K8S_WORK ?? '.');
const NODE = process.env.FAKE_NODE_NAME ?? 'fake-node-1';
const HEARTBEAT_MS = 10_000;
// Addresses only written into the API (Endpoints refuse loopback ones); nothing ever connects to
// them: there is no kube-proxy. TEST-NET-1 (RFC 5737), never routed.
const NODE_IP = '192.0.2.1';
let lastIp = 1;
const nextPodIp = () => `192.0.2.${(lastIp++ % 250) + 2}`;
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const log = (msg) => console.log(`${now()} ${msg}`);

async function register() {
  const labels = {
    'kubernetes.io/hostname': NODE,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'po.test/fake': 'true',
  };
  await kube.post(
    '/api/v1/nodes',
    { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels } },
    { allow: [409] },
  );
  await kube.post(
    '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
    {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: NODE },
      spec: { holderIdentity: NODE, leaseDurationSeconds: 40 },
    },
    { allow: [409] },
  );
}

async function heartbeat() {
  const t = now();
  const capacity = { cpu: '32', memory: '256Gi', pods: '110' };
  await kube.mergePatch(`/api/v1/nodes/${NODE}/status`, {
    status: {
      capacity,
      allocatable: capacity,
      addresses: [{ type: 'InternalIP', address: NODE_IP }],
      nodeInfo: {
        kubeletVersion: 'fake',
        containerRuntimeVersion: 'fake://0',
        kubeProxyVersion: 'fake',
        operatingSystem: 'linux',
        architecture: 'amd64',
        kernelVersion: '',
        osImage: 'fake',
        machineID: '',
        systemUUID: '',
        bootID: '',
      },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'fake node',
          lastHeartbeatTime: t,
          lastTransitionTime: t,
        },
      ],
    },
  });
  await kube.mergePatch(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`, {
    spec: { holderIdentity: NODE, renewTime: new Date().toISOString().replace('Z', '000Z') },
  });
}

const handled = new Set(); // pod uids already reported started, or already deleted

async function act(pod) {
  const { namespace, name, uid } = pod.metadata;
  const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
  if (pod.metadata.deletionTimestamp) {
    if (handled.has(`deleted:${uid}`)) return;
    handled.add(`deleted:${uid}`);
    await kube.delete(
      `${path}?gracePeriodSeconds=0`,
      { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid } },
      { allow: [404, 409] },
    );
    log(`${namespace}/${name} deleted`);
    return;
  }
  const phase = pod.status?.phase ?? 'Pending';
  if (phase !== 'Pending' || handled.has(uid)) return;
  handled.add(uid);
  const t = now();
  const once = pod.spec.restartPolicy !== 'Always';
  const podIP = nextPodIp();
  const condition = (type, status = 'True', reason) => ({
    type,
    status,
    lastTransitionTime: t,
    ...(reason ? { reason } : {}),
  });
  const containerStatus = (c) => ({
    name: c.name,
    image: c.image,
    imageID: `fake://${c.image}`,
    containerID: `fake://${uid}/${c.name}`,
    ready: !once,
    started: !once,
    restartCount: 0,
    state: once
      ? { terminated: { exitCode: 0, reason: 'Completed', startedAt: t, finishedAt: t } }
      : { running: { startedAt: t } },
  });
  const status = {
    phase: once ? 'Succeeded' : 'Running',
    hostIP: NODE_IP,
    podIP,
    podIPs: [{ ip: podIP }],
    startTime: t,
    conditions: once
      ? [
          condition('Initialized'),
          condition('PodScheduled'),
          condition('Ready', 'False', 'PodCompleted'),
          condition('ContainersReady', 'False', 'PodCompleted'),
        ]
      : [
          condition('Initialized'),
          condition('PodScheduled'),
          condition('Ready'),
          condition('ContainersReady'),
        ],
    // Init containers (PgBouncer's) completed before the containers started, as a kubelet reports.
    initContainerStatuses: (pod.spec.initContainers ?? []).map((c) => ({
      ...containerStatus(c),
      ready: true,
      started: false,
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: t, finishedAt: t } },
    })),
    containerStatuses: pod.spec.containers.map(containerStatus),
  };
  try {
    await kube.mergePatch(`${path}/status`, { status });
    log(`${namespace}/${name} -> ${status.phase}`);
  } catch (err) {
    handled.delete(uid);
    if (!(err instanceof KubeError && err.status === 404)) throw err;
  }
}

/** List, then watch from the list's version; list again whenever the server ends the watch. */
async function followPods() {
  const path = `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${NODE}`)}`;
  for (;;) {
    const list = await kube.get(path);
    for (const pod of list.items) await act(pod).catch((err) => log(`error: ${err.message}`));
    let queue = Promise.resolve();
    const w = kube.watch(`${path}&timeoutSeconds=300`, list.metadata.resourceVersion, (event) => {
      if (event.type === 'ERROR') return;
      queue = queue.then(() => act(event.object)).catch((err) => log(`error: ${err.message}`));
    });
    await w.done.catch((err) => log(`watch ended: ${err.message}`));
    await queue;
  }
}

await register();
await heartbeat();
log(`node ${NODE} registered`);
setInterval(
  () => heartbeat().catch((err) => log(`heartbeat failed: ${err.message}`)),
  HEARTBEAT_MS,
);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
await followPods();
