/**
 * The paths of the partner's resources below the API's base path, as events' `links` and the
 * resources themselves carry them. Stated once here, at the bottom of the domain stack, so the
 * events that link them (events/sample-events.ts among them) and the modules that serve them
 * (orders, results) build the same strings.
 */
export const orderPath = (orderId: string) => `/v1/orders/${orderId}`;
export const exceptionsPath = (orderId: string) => `${orderPath(orderId)}/exceptions`;
export const resultsPath = (orderId: string) => `${orderPath(orderId)}/results`;
export const resultPath = (orderId: string, resultId: string) => `${resultsPath(orderId)}/${resultId}`;
