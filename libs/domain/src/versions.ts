/**
 * The three version strings a partner sees, each with one meaning (docs/versioning.md), defined
 * once so the places that carry them cannot drift apart. The API and event payload versions are
 * published vocabulary (@lop/contract); the build version is the service's own.
 */
export { EVENT_PAYLOAD_VERSION, PARTNER_API_VERSION } from '@lop/contract';

/**
 * The service's build (release) version, reported by `GET /v1/health` (spec: "a `version`
 * string"): which release is running, for support and change logs. It changes with every release
 * and says nothing about compatibility. The root package.json carries the same value.
 */
export const SERVICE_VERSION = '0.1.0';
