// Records what happens in one namespace while helm works: every watch event of its Jobs,
// Deployments, ReplicaSets and Pods, with the resourceVersion the API server gave it.
//
// Ordering: on an etcd3-backed API server, an object's resourceVersion is the etcd revision of the
// write that produced it, and revisions grow across all objects. Kubernetes calls the value
// opaque, but for one throw-away control plane that we start ourselves it is a total order of the
// writes, which is what "the migration Job finished before the Deployments changed" is about.
// The wall-clock timestamps in the objects only have one-second resolution.

const KINDS = {
  Job: '/apis/batch/v1/namespaces/NS/jobs',
  Deployment: '/apis/apps/v1/namespaces/NS/deployments',
  ReplicaSet: '/apis/apps/v1/namespaces/NS/replicasets',
  Pod: '/api/v1/namespaces/NS/pods',
};

/** A write's position in the control plane's history (see above). */
export const revision = (object) => Number(object.metadata.resourceVersion);

export async function record(kube, namespace) {
  /** @type {{ kind: string, type: string, rv: number, object: any }[]} */
  const events = [];
  const watches = [];
  for (const [kind, template] of Object.entries(KINDS)) {
    const path = template.replace('NS', namespace);
    const list = await kube.get(path);
    for (const object of list.items)
      events.push({ kind, type: 'EXISTING', rv: revision(object), object });
    const w = kube.watch(`${path}?timeoutSeconds=1800`, list.metadata.resourceVersion, (event) => {
      if (event.type !== 'ERROR')
        events.push({ kind, type: event.type, rv: revision(event.object), object: event.object });
    });
    // A watch that fails mid-test leaves gaps: say so (the checks on its events then fail).
    w.done.catch((err) =>
      console.error(`    watch of ${kind} in ${namespace} failed: ${err.message}`),
    );
    watches.push(w);
  }
  return {
    events,
    /** Events of one kind (and name, when given) after position `from` of the log. */
    of(kind, name, from = 0) {
      return events
        .slice(from)
        .filter((e) => e.kind === kind && (name === undefined || e.object.metadata.name === name));
    },
    mark: () => events.length,
    stop() {
      for (const w of watches) w.stop();
    },
  };
}
