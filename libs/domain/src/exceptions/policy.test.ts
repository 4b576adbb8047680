import { LIFECYCLE_DETAILS, NEXT_ACTIONS, type LifecycleDetail } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { describeState } from '../orders/lifecycle';
import { EXCEPTION_CATEGORIES, exceptionCategorySchema, type ExceptionCategory, type ExceptionCategoryPolicy } from './exceptions.schemas';
import { NO_PARTNER_ACTION, nextActionOf, partnerActionFrom } from './partner-action';

/** The next_action an open partner-owned exception of `category` asks, whatever the state. */
const partnerActionFor = (category: string) => nextActionOf('wait_for_results', partnerActionFrom(category));

const CATEGORIES = exceptionCategorySchema.options;

describe('the exception policy table', () => {
  it('has one row per category, and no row for anything else', () => {
    expect(Object.keys(EXCEPTION_CATEGORIES).sort()).toEqual([...CATEGORIES].sort());
    const { result_delayed: _dropped, ...short } = EXCEPTION_CATEGORIES;
    // @ts-expect-error a category without a row does not compile
    expect(Object.keys(short satisfies Record<ExceptionCategory, ExceptionCategoryPolicy>)).not.toContain('result_delayed');
  });

  it.each(CATEGORIES)('%s: every attribute is set, and its next_action is one the API publishes', (category) => {
    const policy: ExceptionCategoryPolicy = EXCEPTION_CATEGORIES[category];
    expect(NEXT_ACTIONS).toContain(policy.partner_next_action);
    expect(policy.opened_when.trim()).not.toBe('');
  });

  it.each(CATEGORIES)('%s: an open partner-owned one makes the order ask its row’s next_action', (category) => {
    expect(partnerActionFor(category)).toBe(EXCEPTION_CATEGORIES[category].partner_next_action);
    expect(describeState('in_testing', partnerActionFrom(category)).next_action).toBe(EXCEPTION_CATEGORIES[category].partner_next_action);
  });

  it.each(Object.keys(LIFECYCLE_DETAILS) as LifecycleDetail[])('%s: with nothing for the partner to act on, next_action is the state’s', (detail) => {
    expect(describeState(detail, NO_PARTNER_ACTION).next_action).toBe(LIFECYCLE_DETAILS[detail].next_action);
    expect(describeState(detail, partnerActionFrom(null))).toEqual(describeState(detail, NO_PARTNER_ACTION));
  });

  it('asks what it asked before the table held it (behaviour unchanged)', () => {
    expect(Object.fromEntries(CATEGORIES.map((c) => [c, partnerActionFor(c)]))).toEqual({
      transmission_failed: 'resolve_exception',
      order_rejected: 'resolve_exception',
      order_information_required: 'provide_information',
      specimen_rejected: 'recollect_specimen',
      collection_delayed: 'resolve_exception',
      result_delayed: 'resolve_exception',
    });
    // A category no row names (a row written by another release) asks resolve_exception.
    expect(partnerActionFor('no_such_category')).toBe('resolve_exception');
    expect(partnerActionFor('toString')).toBe('resolve_exception');
  });
});
