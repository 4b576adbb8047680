/**
 * The version strings a partner sees in the API and its events, each with one meaning
 * (docs/versioning.md). The service's build version is the service's own (libs/domain/src/versions.ts).
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
