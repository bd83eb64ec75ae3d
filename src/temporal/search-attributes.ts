/**
 * telastic's custom search attributes: what the Temporal Web UI's workflow list shows and
 * filters on (`TelasticState = "running"`). The job workflow upserts them; the dev server
 * registers them at start (`--search-attribute Name=Type`); any other Temporal needs them
 * registered once per namespace with `telastic setup` (src/temporal/namespace-setup.ts).
 *
 * Pure module (only @temporalio/common): workflow code imports it.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Job state: `waiting`, `rendezvous`, `running`, `restarting`, `succeeded`, `failed`, `cancelled`. */
export const TelasticState = defineSearchAttributeKey('TelasticState', SearchAttributeType.KEYWORD);
/** Number of worker processes in the current round (0 outside `running`). */
export const TelasticWorldSize = defineSearchAttributeKey('TelasticWorldSize', SearchAttributeType.INT);
/** Current rendezvous round, from 0. */
export const TelasticRound = defineSearchAttributeKey('TelasticRound', SearchAttributeType.INT);
/** Failure restarts so far (membership changes do not count). */
export const TelasticRestarts = defineSearchAttributeKey('TelasticRestarts', SearchAttributeType.INT);

/** All of them, in the order they are registered. */
export const TELASTIC_SEARCH_ATTRIBUTES = [
  TelasticState,
  TelasticWorldSize,
  TelasticRound,
  TelasticRestarts,
] as const;

/** The `temporal` CLI's spelling of each SDK type (`--search-attribute Name=Keyword`). */
export const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** `['--search-attribute', 'TelasticState=Keyword', …]` for `temporal server start-dev`. */
export function searchAttributeFlags(): string[] {
  return TELASTIC_SEARCH_ATTRIBUTES.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${CLI_TYPE_NAMES[key.type]}`,
  ]);
}

/** temporal.api.enums.v1.IndexedValueType numbers (fixed by the API protos) for each SDK type. */
export const INDEXED_VALUE_TYPE: Record<SearchAttributeType, number> = {
  TEXT: 1,
  KEYWORD: 2,
  INT: 3,
  DOUBLE: 4,
  BOOL: 5,
  DATETIME: 6,
  KEYWORD_LIST: 7,
};
