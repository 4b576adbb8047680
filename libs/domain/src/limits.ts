// The spec's Limits table is published vocabulary (@lop/contract); re-exported for the domain's schemas.
export { LIMITS } from '@lop/contract';
