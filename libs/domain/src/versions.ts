/**
 * The three version strings a partner sees, each with one meaning (docs/versioning.md), defined
 * once so the places that carry them cannot drift apart.
 */

/**
 * The partner API version (spec § Versioning: "The API version is `v1`"): the `/v1` path
 * segment, the OpenAPI and AsyncAPI `info.version`, and the `x-partner-api-version` header of
 * every webhook delivery. Changes only with a new, incompatible API.
 */
export const PARTNER_API_VERSION = 'v1';

/**
 * The event payload version (spec: "`version` (integer, currently 1)"): the `version` field of
 * every event, on the stream and in webhook bodies. The schema version of the event object within
 * the API version; an integer, not the API version's text.
 */
export const EVENT_PAYLOAD_VERSION = 1;

/**
 * The service's build (release) version, reported by `GET /v1/health` (spec: "a `version`
 * string"): which release is running, for support and change logs. It changes with every release
 * and says nothing about compatibility. The root package.json carries the same value.
 */
export const SERVICE_VERSION = '0.1.0';
