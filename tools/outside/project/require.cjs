// CommonJS: Node 20.19+ loads the ESM packages through require(esm).
const assert = require('node:assert/strict');
const { World } = require('@netsim/sim');
const { parseSave } = require('@netsim/netfilter');
const { assertHoldsInvariants } = require('@netsim/check');
assert.equal(typeof World, 'function');
assert.equal(typeof parseSave, 'function');
assert.equal(typeof assertHoldsInvariants, 'function');
console.log('require(esm) ok');
