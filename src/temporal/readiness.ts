/** Checks that a Temporal frontend is ready for telastic. */
import type { Connection } from '@temporalio/client';
import { INDEXED_VALUE_TYPE, TELASTIC_SEARCH_ATTRIBUTES } from './search-attributes';

/**
 * True when all of telastic's custom search attributes are registered in `namespace` with
 * their types; false when one is missing or of another type. Errors are thrown (a caller may
 * wait out an unavailable server).
 */
export async function checkSearchAttributes(connection: Connection, namespace: string): Promise<boolean> {
  const { customAttributes } = await connection.withDeadline(Date.now() + 5_000, () =>
    connection.operatorService.listSearchAttributes({ namespace }),
  );
  return TELASTIC_SEARCH_ATTRIBUTES.every((key) => {
    const type = customAttributes?.[key.name];
    return type === INDEXED_VALUE_TYPE[key.type];
  });
}

/** `checkSearchAttributes`, but false on any error too. */
export async function hasSearchAttributes(connection: Connection, namespace: string): Promise<boolean> {
  return checkSearchAttributes(connection, namespace).catch(() => false);
}

