// informer.mjs - a real @kubernetes/client-node informer (TOOLCHAIN 5.4) on the pods of
// namespace "default" at URL, as an application would run it. Run by ../test_node_client.sh:
//
//   node informer.mjs URL STATE_FILE [MAX_SECONDS]
//
// It writes what the informer holds to STATE_FILE (JSON, replaced atomically on every callback
// and every 100 ms): its objects as [name, uid, resourceVersion] sorted by name, how often
// client-node called the list function, connect/add/update/delete counts, and the errors it
// reported. On an error the informer stops (client-node does not restart itself on errors
// other than 410); like client-node's README example, this restarts it after 1 s.
// Exits on SIGTERM, or by itself after MAX_SECONDS (default 240).
import * as fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';

const [url, stateFile, maxSeconds = '240'] = process.argv.slice(2);
if (!url || !stateFile) {
  console.error('usage: node informer.mjs URL STATE_FILE [MAX_SECONDS]');
  process.exit(2);
}

const kc = new k8s.KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'kwp', server: url, skipTLSVerify: true }],
  users: [{ name: 'anon' }],
  contexts: [{ name: 'kwp', cluster: 'kwp', user: 'anon' }],
  currentContext: 'kwp',
});
const api = kc.makeApiClient(k8s.CoreV1Api);

const state = { lists: 0, connects: 0, adds: 0, updates: 0, deletes: 0, errors: [], objects: [], rv: '' };

const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/pods', () => {
  state.lists++;
  return api.listNamespacedPod({ namespace: 'default' });
});

function save() {
  state.objects = informer
    .list('default')
    .map((o) => [o.metadata.name, o.metadata.uid, o.metadata.resourceVersion])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  state.rv = informer.latestResourceVersion();
  const tmp = `${stateFile}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state) + '\n');
  fs.renameSync(tmp, stateFile);
}

informer.on('connect', () => { state.connects++; save(); });
informer.on('add', () => { state.adds++; save(); });
informer.on('update', () => { state.updates++; save(); });
informer.on('delete', () => { state.deletes++; save(); });
informer.on('error', (err) => {
  state.errors.push(`${err?.statusCode ?? err?.code ?? ''} ${err?.message ?? err}`.trim());
  save();
  setTimeout(() => informer.start().catch(() => {}), 1000);
});

const tick = setInterval(save, 100);
const stop = () => {
  clearInterval(tick);
  informer.stop();
  save();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(stop, Number(maxSeconds) * 1000);

await informer.start();
save();
