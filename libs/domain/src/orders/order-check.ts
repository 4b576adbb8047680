import type { ErrorDetail } from '../http/errors';
import type { CreateOrderBody } from './orders.schemas';
import type { AoeQuestion } from '../requirements/requirements.schemas';
import type { ResolvedRequirements } from '../requirements/requirements';

/**
 * What an order lacks against its requirements profile. This is the same profile
 * GET /requirements shows, so what the profile says is exactly what create enforces.
 */
export function checkOrderAgainstRequirements(requirements: ResolvedRequirements, order: CreateOrderBody): ErrorDetail[] {
  const { profile, billingModes } = requirements;
  const problems: ErrorDetail[] = [];
  const missing = (field: string, message: string) => problems.push({ field, issue: 'required_by_profile', message });

  for (const field of profile.order.required_fields) {
    const value = (order as Record<string, unknown>)[field];
    if (value !== undefined && value !== null && value !== '') continue;
    // The refusal names the values that would pass, as the profile does: the partner can fix it from the 422 alone.
    if (field === 'billing_mode') missing(field, `A billing mode is required in this jurisdiction.${billingModes.length > 0 ? ` Accepted billing modes: ${billingModes.join(', ')}.` : ''}`);
    else missing(field, `The requirements profile needs ${field}.`);
  }

  for (const field of profile.subject.required_patient_fields) {
    const value = (order.patient as Record<string, unknown> | undefined)?.[field];
    if (value === undefined || value === '') missing(`patient.${field}`, `The requirements profile needs patient.${field}.`);
  }

  if (profile.provider.requirement === 'required') {
    if (!order.ordering_provider) missing('ordering_provider', 'An ordering provider is required for this test.');
    for (const field of profile.provider.required_fields) {
      const value = (order.ordering_provider as Record<string, unknown> | undefined)?.[field];
      if (order.ordering_provider && (value === undefined || value === '')) missing(`ordering_provider.${field}`, `The requirements profile needs ordering_provider.${field}.`);
    }
  }

  // A facet that is not configured requires (and checks) nothing.
  if (profile.aoe.authority_state === 'configured') problems.push(...checkAoeAnswers(profile.aoe.questions, order.aoe_answers ?? []));

  if (order.billing_mode && billingModes.length > 0 && !billingModes.includes(order.billing_mode)) {
    problems.push({ field: 'billing_mode', issue: 'billing_mode_not_accepted', message: `Accepted billing modes: ${billingModes.join(', ')}.` });
  }

  if (!profile.collection.methods.includes(order.collection)) {
    problems.push({ field: 'collection', issue: 'collection_method_not_allowed', message: `Allowed collection methods: ${profile.collection.methods.join(', ') || 'none'}.` });
  }
  if (order.region !== undefined && !profile.collection.regions.includes(order.region)) {
    problems.push({ field: 'region', issue: 'region_not_served', message: `Served regions: ${profile.collection.regions.join(', ') || 'none'}.` });
  }
  return problems;
}

function checkAoeAnswers(questions: AoeQuestion[], answers: { question_key: string; answer: string }[]): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const byKey = new Map(answers.map((a) => [a.question_key, a.answer]));
  const known = new Set(questions.map((q) => q.question_key));
  for (const answer of answers) {
    if (!known.has(answer.question_key)) {
      problems.push({ field: `aoe_answers.${answer.question_key}`, issue: 'unknown_question', message: 'No such ask-at-order-entry question for this test.' });
    }
  }
  for (const question of questions) {
    const answer = byKey.get(question.question_key);
    const field = `aoe_answers.${question.question_key}`;
    if (answer === undefined || answer === '') {
      if (question.required) problems.push({ field, issue: 'answer_required', message: question.prompt });
      continue;
    }
    if (!answerFits(question, answer)) problems.push({ field, issue: 'invalid_answer', message: describeExpected(question) });
  }
  return problems;
}

function answerFits(question: AoeQuestion, answer: string): boolean {
  switch (question.answer_type) {
    case 'single_choice':
      return question.options.includes(answer);
    case 'boolean':
      return answer === 'true' || answer === 'false';
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(answer) && !Number.isNaN(Date.parse(answer));
    case 'number':
      return answer.trim() !== '' && Number.isFinite(Number(answer));
    default:
      return true;
  }
}

function describeExpected(question: AoeQuestion): string {
  switch (question.answer_type) {
    case 'single_choice':
      return `Answer one of: ${question.options.join(', ')}.`;
    case 'boolean':
      return 'Answer "true" or "false".';
    case 'date':
      return 'Answer a date as YYYY-MM-DD.';
    case 'number':
      return 'Answer a number.';
    default:
      return question.prompt;
  }
}
