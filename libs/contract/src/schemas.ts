import { z } from 'zod';
import { EVENT_TYPES } from './events';
import { LIFECYCLE_DETAILS, LIFECYCLES, NEXT_ACTIONS, type LifecycleDetail } from './lifecycle';
import { ENVIRONMENTS, SCOPES } from './scopes';

/**
 * The vocabulary as zod schemas, for the service's validation and its OpenAPI/AsyncAPI documents
 * (the `id`s name their components). In a module of their own: a bundle that takes only the
 * constants (the console, `lop`) leaves this module, and zod, out (package.json `sideEffects`).
 */

export const eventTypeSchema = z.enum(EVENT_TYPES).meta({ id: 'EventType' });

export const scopeSchema = z.enum(SCOPES);
export const environmentSchema = z.enum(ENVIRONMENTS).meta({ id: 'Environment', description: 'sandbox or production' });

const DETAIL_VALUES = Object.keys(LIFECYCLE_DETAILS) as [LifecycleDetail, ...LifecycleDetail[]];
export const lifecycleDetailSchema = z.enum(DETAIL_VALUES).meta({ id: 'LifecycleDetail', description: 'The precise state of the order.' });
export const lifecycleSchema = z.enum(LIFECYCLES).meta({ id: 'Lifecycle' });
export const nextActionSchema = z.enum(NEXT_ACTIONS).meta({ id: 'NextAction', description: 'What should happen next, and by whom.' });

export const requisitionStateSchema = z.enum(['not_issued', 'issued', 'cancelled']).meta({ id: 'RequisitionState' });
export const specimenStatusSchema = z.enum(['collected', 'in_transit', 'received', 'accessioned', 'rejected']).meta({ id: 'SpecimenStatus' });
export const transmissionStatusSchema = z.enum(['not_sent', 'sent', 'failed']).meta({ id: 'TransmissionStatus' });
export const ackStatusSchema = z.enum(['not_requested', 'pending', 'accepted', 'rejected']).meta({ id: 'AckStatus' });
