/**
 * telastic's custom search attributes: what the Temporal Web UI's workflow list shows and
 * filters on (`TelasticState = "running"`). The job workflow upserts them; the dev server
 * registers them at start (`--search-attribute Name=Type`); a production cluster needs them
 * registered once with `temporal operator search-attribute create`.
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
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
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
