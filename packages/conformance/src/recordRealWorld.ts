/**
 * Records what the real iptables-save and iptables -L print for every real-world-shaped dump
 * (see realWorld.ts). Needs root: `node --import tsx packages/conformance/src/recordRealWorld.ts`.
 */
import { recordRealWorld } from './realWorld.ts';

for (const line of recordRealWorld()) process.stdout.write(`${line}\n`);
