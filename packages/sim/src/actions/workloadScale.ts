/**
 * `workload.scale`: a StatefulSet-like workload (`podManagementPolicy: Parallel`) scaled to
 * `replicas`: missing ordinals created at once on `nodes[ordinal % nodes.length]`, ordinals at or
 * above `replicas` deleted at once, highest first.
 */
import type { PodSpec } from '../scenario.ts';
import { checkContainerPort } from './check.ts';
import { namespaceOr as ns, podInput, portsText } from './objects.ts';
import { str, storyLine } from './story.ts';
import { defineAction } from './types.ts';

export const workloadScale = defineAction({
  kind: 'workload.scale',
  summary: 'a StatefulSet-like workload is scaled to a number of replicas',
  check(c) {
    c.name('name');
    c.name('namespace', { optional: true });
    c.int('replicas', 0, 1000);
    c.nodes('nodes');
    c.labels('labels', { optional: true });
    c.list('ports', checkContainerPort);
  },
  scope: () => '*',
  apply(a, w) {
    const api = w.api;
    const namespace = ns(a.namespace);
    const prefix = `${a.name}-`;
    // The workload's Pods: `<name>-<ordinal>`, ordinals written as a StatefulSet writes them.
    const ordinals = new Set<number>();
    for (const p of api.list('Pod').items) {
      if (p.metadata.namespace !== namespace || !p.metadata.name.startsWith(prefix)) continue;
      const rest = p.metadata.name.slice(prefix.length);
      if (/^(0|[1-9][0-9]*)$/.test(rest)) ordinals.add(Number(rest));
    }
    w.emit('world.workload.scale', { workload: `${namespace}/${a.name}`, from: ordinals.size, replicas: a.replicas });
    for (const i of [...ordinals].sort((x, y) => y - x)) {
      if (i < a.replicas) continue;
      const name = `${prefix}${i}`;
      w.emit('world.pod.delete', { pod: `${namespace}/${name}` });
      w.tolerate('pod.delete', () => api.delete('Pod', namespace, name));
    }
    for (let i = 0; i < a.replicas; i++) {
      if (ordinals.has(i)) continue;
      const node = a.nodes[i % a.nodes.length] ?? '';
      const spec: PodSpec = { namespace, name: `${prefix}${i}`, node, ...(a.labels !== undefined ? { labels: a.labels } : {}), ports: a.ports };
      w.emit('world.pod.create', { pod: `${namespace}/${spec.name}`, node, ports: portsText(spec.ports) });
      w.tolerate('pod.create', () => api.create('Pod', podInput(spec)));
    }
  },
  story: {
    'world.workload.scale': (e) => storyLine(`workload ${str(e['workload'])} scaled from ${str(e['from'])} to ${str(e['replicas'])} Pods`),
  },
});
