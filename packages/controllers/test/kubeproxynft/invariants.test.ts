/**
 * The built-in invariants over nftables rulesets: stale `dnat to` reachable from a nat hook
 * (through verdict maps), owned nft chains, and the datapath probes through kube-proxy's table.
 */
import { describe, expect, it } from 'vitest';
import { World, builtinInvariants, isCounting, noDuplicateRulesAnywhere, staleDnatAnywhere, ownedChainsStayProgrammed, type Controller, type ControllerContext, type InvariantSource, type ServiceSpec } from '@netsim/sim';
import { flannelNft, kubeProxyNft } from '../../src/index.ts';

const pod = (name: string, app = 'web') => ({ name, node: 'node-1', labels: { app }, ports: [{ port: 8080, protocol: 'TCP' as const }] });

/** A hand-written agent: one nft transaction at start, nothing after (it never cleans up). */
function oneShot(text: string): Controller<ControllerContext> {
  return { name: 'one-shot', create: (ctx) => ({ start: () => ctx.nft.apply(text), stop: () => undefined }) };
}

/** A DNAT to web-1's address (the first Pod IP node-1 hands out), two verdict-map hops from the hook; and the same in a chain no hook reaches. */
const DNAT_TO_WEB0 = `add table ip t
add chain ip t pre { type nat hook prerouting priority dstnat ; }
add chain ip t svc
add chain ip t ep
add chain ip t orphan
add map ip t ips { type ipv4_addr . inet_proto . inet_service : verdict ; }
add element ip t ips { 198.51.100.7 . tcp . 80 : goto svc }
add rule ip t pre ip daddr . meta l4proto . th dport vmap @ips
add rule ip t svc numgen random mod 1 vmap { 0 : goto ep }
add rule ip t ep meta l4proto tcp dnat to 198.18.0.2:8080
add rule ip t orphan meta l4proto tcp dnat to 198.18.0.9:8080
`;

async function runWith(controller: Controller<ControllerContext>, invariants: InvariantSource[], at: (w: World) => void, services: readonly ServiceSpec[] = []) {
  const w = new World({ seed: 1, settleMs: 2000, cluster: { nodes: [{ name: 'node-1' }], services, pods: [pod('web-0'), pod('web-1')] }, controller, invariants });
  at(w);
  return { w, report: await w.run(12_000) };
}

describe('built-in invariants over nftables', () => {
  it('should find a stale dnat to reached through verdict maps from a nat hook, naming the nft chain', async () => {
    const inv = staleDnatAnywhere();
    const { report } = await runWith(oneShot(DNAT_TO_WEB0), [inv], (w) => w.at(3000, { kind: 'pod.delete', name: 'web-1' }));
    expect(report).toMatchObject({ status: 'violation', violation: { invariant: 'no stale DNAT anywhere' } });
    const message = report.status === 'violation' ? report.violation.message : '';
    expect(message).toMatch(/^DNAT tcp → 198\.18\.0\.2:8080 in nft ip t ep on node-1 is stale: 198\.18\.0\.2 was default\/web-1/);
  });

  it('should leave alone a dnat to in a chain no hook reaches, and a live one', async () => {
    const inv = staleDnatAnywhere();
    const { report } = await runWith(oneShot(DNAT_TO_WEB0.replace('198.18.0.9', '198.18.0.77')), [inv], () => undefined);
    expect(report.status).toBe('ok');
  });

  it('should find the same nft rule twice in a chain once the node has settled', async () => {
    const twice = 'add table ip t\nadd chain ip t post { type nat hook postrouting priority srcnat ; }\nadd rule ip t post ip saddr 198.18.0.0/15 counter masquerade\nadd rule ip t post ip saddr 198.18.0.0/15 counter masquerade\n';
    const { report } = await runWith(oneShot(twice), [noDuplicateRulesAnywhere()], () => undefined);
    expect(report).toMatchObject({ status: 'violation', violation: { invariant: 'no duplicate rules in any table', message: 'nft ip t post on node-1 holds the same rule twice (rules 1 and 2) (for 2001ms, longer than the 2000ms settle time)' } });
  });

  it('should catch flannel-nft:faulty deleting its postrtg chain with its table on restart, and pass flannel-nft:fixed', async () => {
    const restart = (w: World) => w.at(6000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
    const faulty = await runWith(flannelNft('faulty'), [ownedChainsStayProgrammed()], restart);
    expect(faulty.report).toMatchObject({ status: 'violation', violation: { invariant: 'owned chains stay programmed' } });
    const message = faulty.report.status === 'violation' ? faulty.report.violation.message : '';
    expect(message).toMatch(/^nft ip flannel-ipv4 postrtg on node-1 lost its table \(ip flannel-ipv4 was deleted\) \(it was since t=\d+ms\)$/);
    expect((await runWith(flannelNft('fixed'), [ownedChainsStayProgrammed()], restart)).report.status).toBe('ok');
  });

  it('should keep every built-in invariant over kube-proxy-nft:fixed under churn, with the nft DNAT examined and the Service probes run through its table', async () => {
    const web: ServiceSpec = { name: 'web', type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', nodePort: 30080 }] };
    const invs = builtinInvariants().map((s) => (typeof s === 'function' ? s() : s));
    const { report } = await runWith(kubeProxyNft('fixed'), invs, (x) => {
      x.at(3000, { kind: 'pod.delete', name: 'web-1' });
      x.at(5000, { kind: 'pod.create', pod: pod('web-2') });
      x.at(7000, { kind: 'agent.restart', node: 'node-1', downMs: 1000 });
    }, [web]);
    expect(report.status).toBe('ok');
    const examined = Object.fromEntries(invs.filter(isCounting).map((i) => [i.name, i.examined()]));
    // The endpoints' dnat statements, the owned chains of ip kube-proxy, the Service probes through it.
    expect(examined['no stale DNAT anywhere']).toBeGreaterThan(0);
    expect(examined['owned chains stay programmed']).toBeGreaterThan(0);
    expect(examined['datapath probes succeed']).toBeGreaterThan(0);
  });
});
