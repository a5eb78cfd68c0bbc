/**
 * Notifications: which deploy environments email a person, per product, and whether comments do.
 * Every environment unless they chose some; deploys ask wantDeployMail who of a deploy's followers
 * is to get its message, comments wantCommentMail.
 */
export {
  parseEnvironmentChoice,
  parseNotificationChoice,
  type EnvironmentChoice,
  type NotificationChoice,
} from './input.js';
export { NOTIFICATION_SCHEMAS } from './present.js';
export { notificationRoutes } from './routes.js';
export {
  commentMailChoice,
  environmentChoice,
  notificationChoice,
  setCommentMailChoice,
  setNotificationChoice,
  setEnvironmentChoice,
  wantCommentMail,
  wantDeployMail,
} from './service.js';
