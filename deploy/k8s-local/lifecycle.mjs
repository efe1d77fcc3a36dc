// The release's life on a real API server (test.mjs): install, upgrade, rollback, helm test and
// uninstall of the unmodified chart, each checked through what the API server stored and the
// order in which it stored it (recorder.mjs).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { record } from './recorder.mjs';
import {
  checkAvailable,
  checkNothingLeft,
  helmUninstall,
  createNamespace,
  deploymentName,
  FULL,
  RELEASE,
  SECRETS,
  SERVICES,
} from './release.mjs';
import { check, info, sameJson, sleep, step, waitFor } from './tools.mjs';

const MIGRATE_JOB = `${FULL}-migrate`;
const TEST_POD = `${FULL}-test`;
/** Gives the recorder's watches a moment to deliver what helm caused (they arrive within milliseconds). */
const settle = () => sleep(1000);

/**
 * The one ReplicaSet of each Deployment that has pods, once the scale-down of the others is done
 * (helm's wait ends when the new pods are ready; the old ReplicaSet may still be scaling to 0).
 */
async function activeReplicaSets(kube, namespace) {
  const path = `/apis/apps/v1/namespaces/${namespace}/replicasets?labelSelector=app.kubernetes.io/instance%3D${RELEASE}`;
  const settled = await waitFor(async () => {
    const active = {};
    for (const rs of (await kube.get(path)).items) {
      if (rs.spec.replicas === 0 && rs.status.replicas === 0) continue;
      const service = rs.metadata.labels['app.kubernetes.io/component'];
      if (active[service]) return null;
      active[service] = rs.metadata.name;
    }
    return active;
  });
  check(settled, 'each Deployment has exactly one ReplicaSet with pods');
  return settled;
}

const checksum = (d) => d.spec.template.metadata.annotations['checksum/config'];

/** The migration hook Job of one release step: created, completed, deleted (hook-succeeded). */
function migrationRun(rec, from) {
  const events = rec.of('Job', MIGRATE_JOB, from);
  const added = events.find((e) => e.type === 'ADDED');
  const completed = events.find((e) => e.object.status?.succeeded >= 1);
  const deleted = events.find((e) => e.type === 'DELETED');
  return { added, completed, deleted, uid: added?.object.metadata.uid };
}

export async function lifecycle({ kube, helm, kubectl, chart, namespace, workDir, root }) {
  const values = (name, v) => {
    const file = join(workDir, `values-${name}.json`);
    writeFileSync(file, JSON.stringify(v));
    return file;
  };
  await createNamespace(kube, namespace);
  const rec = await record(kube, namespace);
  try {
    // ---- install
    step(
      `helm install --wait (release ${RELEASE}, namespace ${namespace}, Secrets made by the test)`,
    );
    helm(['install', RELEASE, chart, '-n', namespace, '--wait', '--timeout', '3m']);
    await settle();
    const run1 = migrationRun(rec, 0);
    check(
      run1.added && run1.completed,
      `the migration hook Job ${MIGRATE_JOB} ran and completed (status.succeeded=${run1.completed?.object.status.succeeded})`,
    );
    check(
      run1.deleted,
      'the Job was deleted once it succeeded (hook-delete-policy hook-succeeded)',
    );
    const created = rec.of('Deployment').filter((e) => e.type === 'ADDED');
    check(created.length === SERVICES.length, `${created.length} Deployments created`);
    const firstDeployment = Math.min(...created.map((e) => e.rv));
    check(
      run1.completed.rv < firstDeployment,
      `the Job completed (revision ${run1.completed.rv}) before the first Deployment was created (revision ${firstDeployment})`,
    );
    const jobPod = rec
      .of('Pod')
      .find(
        (e) =>
          e.object.metadata.labels?.['job-name'] === MIGRATE_JOB &&
          e.object.status?.phase === 'Succeeded',
      );
    check(
      jobPod && jobPod.rv < firstDeployment,
      `its pod ${jobPod?.object.metadata.name} ran migrate deploy (${jobPod?.object.spec.containers[0].args.join(' ')}) before any Deployment existed`,
    );
    const rev1 = await checkAvailable(kube, namespace);
    const rs1 = await activeReplicaSets(kube, namespace);
    const status1 = JSON.parse(helm(['status', RELEASE, '-n', namespace, '-o', 'json']).stdout);
    check(
      status1.version === 1 && status1.info.status === 'deployed',
      `helm status: revision ${status1.version}, ${status1.info.status}`,
    );

    // ---- upgrade: replicas, the sticky mode and a setting every service reads
    step(
      'helm upgrade --wait: api-gateway replicas 2→3, workerRouting.sticky header-hash→cookie, config.LOG_LEVEL info→debug',
    );
    const mark = rec.mark();
    const upgradeValues = values('upgrade', {
      services: { 'api-gateway': { replicas: 3 } },
      workerRouting: { sticky: 'cookie' },
      config: { LOG_LEVEL: 'debug' },
    });
    helm([
      'upgrade',
      RELEASE,
      chart,
      '-n',
      namespace,
      '-f',
      upgradeValues,
      '--wait',
      '--timeout',
      '3m',
    ]);
    await settle();
    const run2 = migrationRun(rec, mark);
    check(
      run2.completed && run2.uid !== run1.uid,
      `the migration hook ran again: a new Job (uid ${run2.uid?.slice(0, 8)}…) completed`,
    );
    const rolled = rec
      .of('Deployment', undefined, mark)
      .filter(
        (e) =>
          e.type === 'MODIFIED' &&
          e.object.metadata.generation >
            rev1[e.object.metadata.labels['app.kubernetes.io/component']].metadata.generation,
      );
    const firstChange = Math.min(...rolled.map((e) => e.rv));
    check(
      rolled.length > 0 && run2.completed.rv < firstChange,
      `the Job completed (revision ${run2.completed.rv}) before helm changed the first Deployment (revision ${firstChange})`,
    );
    const configMap = await kube.get(`/api/v1/namespaces/${namespace}/configmaps/${FULL}-config`);
    check(configMap.data.LOG_LEVEL === 'debug', 'the ConfigMap carries LOG_LEVEL=debug');
    const rev2 = await checkAvailable(kube, namespace, { 'api-gateway': 3 });
    const rs2 = await activeReplicaSets(kube, namespace);
    for (const service of SERVICES) {
      check(
        checksum(rev2[service]) !== checksum(rev1[service]) && rs2[service] !== rs1[service],
        `${service}: checksum/config changed, new ReplicaSet ${rs2[service]} replaced ${rs1[service]}`,
      );
    }
    // Only the ConfigMap changed for these: the checksum annotation alone rolled their pods.
    for (const service of ['pipeline-service', 'scheduler-service', 'result-consumer']) {
      const strip = (d) => {
        const t = structuredClone(d.spec.template);
        delete t.metadata.annotations['checksum/config'];
        return t;
      };
      check(
        sameJson(strip(rev1[service]), strip(rev2[service])),
        `${service}: the pod template differs only by the checksum annotation, so the ConfigMap change alone rolled it`,
      );
    }
    const oldPodsGone = await waitFor(async () => {
      const pods = await kube.get(
        `/api/v1/namespaces/${namespace}/pods?labelSelector=app.kubernetes.io/instance%3D${RELEASE}`,
      );
      return pods.items.every((p) =>
        Object.values(rs2).some((rs) => p.metadata.name.startsWith(`${rs}-`)),
      )
        ? pods.items
        : null;
    });
    check(
      oldPodsGone && oldPodsGone.length === 11,
      `every pod belongs to the new ReplicaSets (${oldPodsGone?.length ?? '?'} pods: 3 + 4 × 2)`,
    );
    const ingress = await kube.get(
      `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses/${FULL}-workers`,
    );
    const a = ingress.metadata.annotations;
    check(
      a['nginx.ingress.kubernetes.io/affinity'] === 'cookie' &&
        !a['nginx.ingress.kubernetes.io/upstream-hash-by'],
      'the workers Ingress switched to cookie affinity (no upstream-hash-by)',
    );

    // ---- rollback
    step('helm rollback to revision 1 --wait');
    const mark3 = rec.mark();
    helm(['rollback', RELEASE, '1', '-n', namespace, '--wait', '--timeout', '3m']);
    await settle();
    const history = JSON.parse(helm(['history', RELEASE, '-n', namespace, '-o', 'json']).stdout);
    const last = history.at(-1);
    check(
      last.revision === 3 && last.status === 'deployed' && /Rollback to 1/.test(last.description),
      `helm history: revision ${last.revision} ${last.status}, "${last.description}"`,
    );
    const rev3 = await checkAvailable(kube, namespace);
    const rs3 = await activeReplicaSets(kube, namespace);
    for (const service of SERVICES) {
      check(
        checksum(rev3[service]) === checksum(rev1[service]) && rs3[service] === rs1[service],
        `${service}: back on revision 1's checksum and ReplicaSet ${rs1[service]}`,
      );
    }
    const configMap3 = await kube.get(`/api/v1/namespaces/${namespace}/configmaps/${FULL}-config`);
    check(configMap3.data.LOG_LEVEL === 'info', 'the ConfigMap is back to LOG_LEVEL=info');
    const ingress3 = await kube.get(
      `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses/${FULL}-workers`,
    );
    check(
      ingress3.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'] ===
        '$http_x_worker_session',
      'the workers Ingress hashes on X-Worker-Session again',
    );
    check(
      !migrationRun(rec, mark3).added,
      'no migration Job ran for the rollback (the chart has no pre-rollback hook: a rollback never changes the schema, docs/upgrading.md)',
    );

    // ---- helm test
    step('helm test (the chart test hook)');
    const mark4 = rec.mark();
    helm(['test', RELEASE, '-n', namespace, '--timeout', '2m']);
    await settle();
    const testEvents = rec.of('Pod', TEST_POD, mark4);
    const testPod = testEvents.find((e) => e.type === 'ADDED')?.object;
    check(testPod, `helm test created the hook Pod ${TEST_POD}`);
    check(
      testEvents.some((e) => e.object.status?.phase === 'Succeeded') &&
        testEvents.some((e) => e.type === 'DELETED'),
      'it reached Succeeded (set by the fake node: no container ran) and was deleted (hook-succeeded)',
    );
    await checkTestHook({ kube, namespace, testPod, deps: rev3, root });

    // ---- uninstall
    step('helm uninstall --wait');
    helmUninstall(helm, namespace);
    check(
      JSON.parse(helm(['list', '-n', namespace, '-o', 'json']).stdout).length === 0,
      'helm list shows no release',
    );
    await checkNothingLeft(kubectl, namespace);
  } finally {
    rec.stop();
  }
}

/**
 * What the hook would check on a real node, checked here without a container: its spec against the
 * objects the release made, and its script run by this machine's Node on the built services with the
 * ConfigMap the API server stored (the readiness calls need cluster DNS and are left out).
 */
async function checkTestHook({ kube, namespace, testPod, deps, root }) {
  const c = testPod.spec.containers[0];
  const env = Object.fromEntries(c.env.map((e) => [e.name, e]));
  check(
    testPod.metadata.annotations['helm.sh/hook'] === 'test' &&
      testPod.spec.restartPolicy === 'Never',
    'a run-once Pod with the helm.sh/hook: test annotation',
  );
  check(
    c.image === deps['api-gateway'].spec.template.spec.containers[0].image,
    `it runs the release's image (${c.image})`,
  );
  const configMapName = c.envFrom?.[0]?.configMapRef?.name;
  const configMap = await kube.get(`/api/v1/namespaces/${namespace}/configmaps/${configMapName}`);
  check(configMap.data.LOG_LEVEL, `it reads the release's ConfigMap ${configMapName}`);
  for (const [name, key] of [
    ['DATABASE_URL', 'pipeline-orchestration-db'],
    ['REDIS_URL', 'pipeline-orchestration-redis'],
  ]) {
    check(
      env[name]?.valueFrom?.secretKeyRef?.name === key,
      `${name} comes from the Secret ${key}, as in the Deployments`,
    );
  }
  const ports = JSON.parse(env.PO_TEST_SERVICES.value);
  for (const service of SERVICES) {
    const svc = await kube.get(
      `/api/v1/namespaces/${namespace}/services/${deploymentName(service)}`,
    );
    const byName = Object.fromEntries(svc.spec.ports.map((p) => [p.name, p.port]));
    check(
      ports[service]?.port === byName.http && ports[service]?.metricsPort === byName.metrics,
      `${service}: the ports it checks are the Service's (${byName.http}, metrics ${byName.metrics})`,
    );
  }
  const urls = env.PO_TEST_READY_URLS.value.split(' ');
  for (const url of urls) {
    const { hostname, port } = new URL(url);
    const svc = await kube.get(`/api/v1/namespaces/${namespace}/services/${hostname}`, {
      allow: [404],
    });
    check(
      svc?.spec?.ports?.some((p) => p.name === 'http' && String(p.port) === port),
      `${url} names an existing Service and its http port`,
    );
  }
  // The script itself, on this machine: /app in the image is the repository root here.
  const script = c.args[0].replaceAll('/app/', `${root}/`);
  const secrets = Object.assign({}, ...Object.values(SECRETS));
  const run = (overrides) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: {
        PATH: process.env.PATH,
        ...configMap.data,
        ...secrets,
        PO_TEST_SERVICES: env.PO_TEST_SERVICES.value,
        ...overrides,
      },
      encoding: 'utf8',
    });
  const good = run({});
  const oks = good.stdout.split('\n').filter((l) => l.startsWith('ok ')).length;
  check(
    good.status === 0 && oks === SERVICES.length,
    `its script passes with the stored ConfigMap: each service's parser accepts the settings (${oks} ok)`,
  );
  const bad = run({ LOG_LEVEL: 'loud', GATEWAY_VISIBILITY_TIMEOUT: '0' });
  check(
    bad.status === 1 && /FAIL worker-gateway: .*GATEWAY_VISIBILITY_TIMEOUT/s.test(bad.stdout),
    'and fails, naming the setting, when a value is bad (LOG_LEVEL=loud, GATEWAY_VISIBILITY_TIMEOUT=0)',
  );
  info(
    `e.g. ${bad.stdout
      .split('\n')
      .find((l) => l.includes('GATEWAY_VISIBILITY_TIMEOUT'))
      ?.trim()}`,
  );
}
