/**
 * Notifications: which deploy environments email a person, per product. Every environment unless
 * they chose some; deploys ask wantDeployMail who of a deploy's followers is to get its message.
 */
export { parseEnvironmentChoice, type EnvironmentChoice } from './input.js';
export { NOTIFICATION_SCHEMAS } from './present.js';
export { notificationRoutes } from './routes.js';
export { environmentChoice, setEnvironmentChoice, wantDeployMail } from './service.js';
