/**
 * The activity log: every change of an item (its fields, deploys, and what the conversation
 * around it adds), with who made it, when, and what changed. A feature that changes an item puts
 * the change in the log with recordActivity, in the change's own transaction.
 */
export { ACTIVITY_ACTIONS, type ActivityAction } from './model.js';
export { ACTIVITY_SCHEMAS, presentActivities, type ActivityJson } from './present.js';
export { activityRoutes, type ActivityRouteOptions } from './routes.js';
export { activitiesOf, itemActivitiesOf, recordActivity, type ActivityInput } from './service.js';
