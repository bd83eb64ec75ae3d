/**
 * A node the ledger host's policy keeps out of every job's rounds (src/ledger/quarantine.ts
 * decides; decide.applyQuarantine applies). Defined here, where the job's state names it, so
 * that src/job imports nothing from src/ledger.
 */
export interface Quarantine {
  nodeId: string;
  /** One line: how many failures in what window, and the last one's message. */
  reason: string;
}
