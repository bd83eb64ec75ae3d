/**
 * The failure converter of a sealing process (loaded by path: workers load it in their main
 * thread and bundle it into workflow code, clients load it too). Failure messages and stack
 * traces move into `encodedAttributes`, a payload the codec seals; the plain message reads
 * "Encoded failure". Without a key the SDK's default converter is used and failures stay readable.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
