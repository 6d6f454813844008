/**
 * The port table (Antrea's `portcache.PortTable`): the agent's in-memory record of every mapping
 * it programmed, keyed by Pod (`namespace/name`), with the node port reserved for each. It is
 * lost when the agent process dies and rebuilt at start from the Pods' annotations.
 *
 * Node ports come from a range, searched from a moving start with wrap-around; a port is
 * *reserved* by holding a listening socket on it for as long as the mapping exists, so no other
 * program (and no other mapping) can take it.
 */
import type { PodPortRules } from './rules.ts';
import type { PodNodePort } from './types.ts';

/** A held local port (a listening socket). */
export interface Closer {
  close(): void;
}

/** Opens listening sockets (Antrea's `LocalPortOpener`); throws when the port is taken. */
export interface LocalPortOpener {
  openLocalPort(port: number, protocol: string): Closer;
}

/**
 * The sockets of one agent process. They close when the process dies, which is why this lives
 * in the process (a restarted agent starts with no port held).
 */
export class ProcessPortOpener implements LocalPortOpener {
  readonly #held = new Set<string>();

  openLocalPort(port: number, protocol: string): Closer {
    if (protocol !== 'tcp' && protocol !== 'udp') throw new Error(`unknown or missing protocol: "${protocol}"`);
    const key = `${port}/${protocol}`;
    if (this.#held.has(key)) throw new Error(`listen ${protocol}4 :${port}: bind: address already in use`);
    this.#held.add(key);
    let open = true;
    return {
      close: () => {
        if (open) this.#held.delete(key);
        open = false;
      },
    };
  }

  /** Ports currently held, as `port/protocol`, sorted (for tests and traces). */
  held(): string[] {
    return [...this.#held].sort();
  }
}

/** One mapping in the table (Antrea's `NodePortData`). */
export interface NodePortData {
  readonly podKey: string;
  readonly nodePort: number;
  readonly podPort: number;
  readonly podIP: string;
  readonly protocol: string;
  readonly socket: Closer;
  /**
   * Set when a deletion was attempted: the entry must not be reused, and deleting it again is
   * how the controller retries.
   */
  defunct: boolean;
}

/** An inclusive range of node ports, like `nodePortLocal.portRange`. */
export interface PortRange {
  readonly start: number;
  readonly end: number;
}

/** The port table. Entries are kept in insertion order (Antrea's indexer returns map order). */
export class PortTable {
  readonly startPort: number;
  readonly endPort: number;
  portSearchStart: number;
  readonly rules: PodPortRules;
  readonly #opener: LocalPortOpener;
  readonly #entries: NodePortData[] = [];

  constructor(rules: PodPortRules, opener: LocalPortOpener, range: PortRange) {
    if (!Number.isInteger(range.start) || !Number.isInteger(range.end) || range.start < 1 || range.end > 65535 || range.start > range.end) {
      throw new RangeError(`NodePortLocal port range ${range.start}-${range.end} is not a valid range of ports`);
    }
    this.rules = rules;
    this.#opener = opener;
    this.startPort = range.start;
    this.endPort = range.end;
    this.portSearchStart = range.start;
  }

  /** Every entry of a Pod, in insertion order (the live objects: callers may mark them defunct). */
  getDataForPod(podKey: string): NodePortData[] {
    return this.#entries.filter((e) => e.podKey === podKey);
  }

  /** A copy of the entry for (Pod, Pod port, protocol), if any. */
  getEntry(podKey: string, podPort: number, protocol: string): NodePortData | undefined {
    const e = this.#find(podKey, podPort, protocol);
    return e === undefined ? undefined : { ...e };
  }

  /** Every entry, in insertion order (copies). */
  entries(): NodePortData[] {
    return this.#entries.map((e) => ({ ...e }));
  }

  #find(podKey: string, podPort: number, protocol: string): NodePortData | undefined {
    return this.#entries.find((e) => e.podKey === podKey && e.podPort === podPort && e.protocol === protocol);
  }

  /** Search the range for a port no entry uses and that can be reserved; advance the search start past it. */
  #getFreePort(protocol: string): { readonly port: number; readonly socket: Closer } {
    const numPorts = this.endPort - this.startPort + 1;
    for (let i = 0; i < numPorts; i++) {
      let port = this.portSearchStart + i;
      if (port > this.endPort) port -= numPorts;
      if (this.#entries.some((e) => e.nodePort === port && e.protocol === protocol)) continue;
      let socket: Closer;
      try {
        socket = this.#opener.openLocalPort(port, protocol);
      } catch {
        // Taken by someone else: try the next one.
        continue;
      }
      this.portSearchStart = port + 1 > this.endPort ? this.startPort : port + 1;
      return { port, socket };
    }
    throw new Error('no free port found');
  }

  /**
   * Allocate a node port for (Pod, Pod port, protocol), install its DNAT rule, record it.
   * Returns the node port. Fails if the entry exists.
   */
  async addRule(podKey: string, podPort: number, protocol: string, podIP: string): Promise<number> {
    if (this.#find(podKey, podPort, protocol) !== undefined) throw new Error(`existing Linux Nodeport entry for ${podIP}:${podPort}:${protocol}`);
    const { port, socket } = this.#getFreePort(protocol);
    try {
      await this.rules.addRule(port, podIP, podPort, protocol);
    } catch (e) {
      // Release the reservation when the rule could not be installed (Antrea #8110).
      socket.close();
      throw e;
    }
    this.#entries.push({ podKey, nodePort: port, podPort, podIP, protocol, socket, defunct: false });
    return port;
  }

  /**
   * Delete one entry: its rule, its reservation, then the entry itself. The entry is marked
   * defunct first, so a failed deletion is never mistaken for a usable mapping.
   */
  async deleteEntry(data: NodePortData): Promise<void> {
    const live = this.#entries.find((e) => e === data) ?? this.#find(data.podKey, data.podPort, data.protocol);
    if (live === undefined) return;
    live.defunct = true;
    await this.rules.deleteRule(live.nodePort, live.podIP, live.podPort, live.protocol);
    live.socket.close();
    const i = this.#entries.indexOf(live);
    if (i >= 0) this.#entries.splice(i, 1);
  }

  /** Delete the entry for (Pod, Pod port, protocol) if there is one. */
  async deleteRule(podKey: string, podPort: number, protocol: string): Promise<void> {
    const data = this.#find(podKey, podPort, protocol);
    if (data === undefined) return;
    await this.deleteEntry(data);
  }

  /**
   * Agent start-up: record these mappings (reserving their ports; a port that cannot be reserved
   * is skipped and the controller will allocate a new one). The caller then writes the rules
   * with {@link syncRules}.
   */
  restoreRules(mappings: readonly PodNodePort[]): void {
    for (const m of mappings) {
      let socket: Closer;
      try {
        socket = this.#opener.openLocalPort(m.nodePort, m.protocol);
      } catch {
        continue;
      }
      this.#entries.push({ ...m, socket, defunct: false });
    }
  }

  /** Make the chain hold exactly the table's mappings (one restore). */
  async syncRules(): Promise<void> {
    await this.rules.addAllRules(this.#entries.map((e) => ({ podKey: e.podKey, nodePort: e.nodePort, podPort: e.podPort, podIP: e.podIP, protocol: e.protocol })));
  }
}
