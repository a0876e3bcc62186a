// block-ssz.mjs: blocks as the node's REST API gives them (/eth/v2/beacon/blocks/{id}, JSON: Lodestar
// 1.5.1 serves no SSZ for blocks, only for debug states) to their SSZ, with the node's own types
// (@lodestar/types of the same release): for each FILE.json argument ({version, data}), writes
// the SignedBeaconBlock's SSZ to FILE.ssz.  Run with the nodes' preset: LODESTAR_PRESET=minimal.
import { readFileSync, writeFileSync } from 'node:fs'
import { ssz } from '@lodestar/types'

for (const file of process.argv.slice(2)) {
  const { version, data } = JSON.parse(readFileSync(file, 'utf8'))
  const type = ssz[version].SignedBeaconBlock
  writeFileSync(file.replace(/\.json$/, '.ssz'), type.serialize(type.fromJson(data)))
}
