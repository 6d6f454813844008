/**
 * Building packets for evaluation without spelling out every field.
 */
import type { Packet } from './evalTypes.ts';

/** What {@link makePacket} needs: the addresses, and any field that differs from the defaults. */
export type PacketInit = Partial<Packet> & Pick<Packet, 'src' | 'dst'>;

/**
 * A packet with the defaults of a connection's first TCP segment: protocol 6, source port 40000,
 * destination port 80, SYN, no interfaces, mark 0, 60 bytes, not a fragment. Any field given in
 * `init` wins.
 *
 * @example
 * ```ts
 * const syn = makePacket({ src: parseIpv4('203.0.113.7'), dst: parseIpv4('198.18.0.1'), dport: 30080, inIface: 'eth0' });
 * ```
 */
export function makePacket(init: PacketInit): Packet {
  return {
    proto: 6,
    sport: 40000,
    dport: 80,
    tcpFlags: 0x02,
    icmpType: 0,
    icmpCode: 0,
    inIface: null,
    outIface: null,
    mark: 0,
    lengthBytes: 60,
    fragment: false,
    ...init,
  };
}
