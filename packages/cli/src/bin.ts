#!/usr/bin/env node
/**
 * `netsim` — the command line. Each subcommand lives in `commands/` and registers itself here.
 */
import { Command } from 'commander';
import { registerRulesetCommand } from './commands/ruleset.ts';
import { fuzzCommand } from './commands/fuzz.ts';
import { replayCommand } from './commands/replay.ts';
import { traceCommand } from './commands/trace.ts';
import { registerNftCommand } from './commands/nft.ts';

const program = new Command();
program
  .name('netsim')
  .description('Deterministic network simulator for Kubernetes node-networking controllers')
  .version('0.1.0');
program.addCommand(traceCommand());

registerRulesetCommand(program);
registerNftCommand(program);

// scenario: replay and fuzz
program.addCommand(replayCommand());
program.addCommand(fuzzCommand());

await program.parseAsync(process.argv);
