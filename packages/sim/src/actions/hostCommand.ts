/**
 * The actions that run one host-file line on a host of the data plane: `sysctl.set`, `link.set`,
 * `addr.add`, `addr.del`, `route.add`, `route.del` and `host.run`. One mechanism (the host's
 * command interpreter), one module: each kind only spells its line differently.
 */
import { SimError } from '../errors.ts';
import type { HostAction } from '../scenario.ts';
import type { FieldChecker } from './check.ts';
import { str, storyLine } from './story.ts';
import { defineAction, type ActionModule } from './types.ts';

/** The host-file line a network action runs. */
export function hostCommandOf(a: HostAction): string {
  switch (a.kind) {
    case 'sysctl.set':
      return `sysctl -w ${a.key}=${a.value}`;
    case 'link.set':
      return `ip link set ${a.iface} ${a.state}`;
    case 'addr.add':
      return `ip addr add ${a.address} dev ${a.iface}`;
    case 'addr.del':
      return `ip addr del ${a.address} dev ${a.iface}`;
    case 'route.add':
      return `ip route add ${a.route}`;
    case 'route.del':
      return `ip route del ${a.route}`;
    case 'host.run':
      return a.command;
  }
}

const story: ActionModule['story'] = { 'world.net.command': (e: Parameters<ActionModule['story'][string]>[0]) => storyLine(`on ${str(e['host'])}: ${str(e['command'])}`) };

function hostAction<K extends HostAction['kind']>(kind: K, summary: string, check: (c: FieldChecker) => void): ActionModule<K> {
  return defineAction<K>({
    kind,
    summary,
    check(c) {
      c.host('host');
      check(c);
    },
    apply(action, w) {
      const a = action as unknown as HostAction;
      const command = hostCommandOf(a);
      const dp = w.datapath;
      if (dp === undefined) throw new SimError('invalid-argument', `${a.kind} on ${a.host}: network actions need the data plane (describe a network or add a probe)`);
      w.emit('world.net.command', { host: a.host, command });
      dp.runCommand(a.host, command);
    },
    story,
  });
}

export const sysctlSet = hostAction('sysctl.set', '`sysctl -w key=value` on a host', (c) => {
  c.str('key');
  const v = c.get('value');
  if (typeof v !== 'string' && typeof v !== 'number') c.fail('value', `must be a string, got ${JSON.stringify(v) ?? 'nothing'}`);
});
export const linkSet = hostAction('link.set', '`ip link set IFACE up|down` on a host', (c) => {
  c.str('iface');
  c.oneOf('state', ['up', 'down']);
});
export const addrAdd = hostAction('addr.add', '`ip addr add ADDRESS/PREFIX dev IFACE` on a host', (c) => {
  c.str('iface');
  c.str('address');
});
export const addrDel = hostAction('addr.del', '`ip addr del ADDRESS/PREFIX dev IFACE` on a host', (c) => {
  c.str('iface');
  c.str('address');
});
export const routeAdd = hostAction('route.add', '`ip route add ROUTE` on a host', (c) => c.str('route'));
export const routeDel = hostAction('route.del', '`ip route del ROUTE` on a host', (c) => c.str('route'));
export const hostRun = hostAction('host.run', 'any host-file line on a host', (c) => c.str('command'));
