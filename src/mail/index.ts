/**
 * Mail: the outbox, its worker and transports, the message templates, and what operators see.
 * Mail knows no other feature's data: a feature queues its messages here inside its own
 * transaction, and gives the worker a renderer that loads what they are about when they are sent.
 */
export { renderDeployEmail, deploySubject, type DeployMessageParts } from './deploy-email.js';
export { renderRollbackEmail, rollbackSubject, type RollbackMessageParts } from './rollback-email.js';
export { renderInvitationEmail, invitationSubject, type InvitationMessageParts } from './invitation-email.js';
export {
  queueBlockNotification,
  queueCommentNotifications,
  queueDeployNotifications,
  queueInvitation,
  queueRefusalExplanation,
  queueSignin,
  RETRY_WINDOW_MS,
} from './notifications.js';
export {
  blockSubject,
  conversationSubject,
  renderBlockEmail,
  renderCommentEmail,
  type CommentMessageParts,
  type TalkedItem,
} from './comment-email.js';
export { itemThreadId, ReplyAddresses } from './reply-address.js';
export { renderSigninEmail, type SigninMessageParts } from './signin-email.js';
export { SentCount, type OutboxSummary } from './outbox.js';
export type { MessageBody, MessageRenderer, MessageRenderers } from './render.js';
export { unsubscribeRoutes } from './routes.js';
export { MAIL_SCHEMAS } from './schema.js';
export { assessDelivery, mailStatus, retryMail, summarize, type MailStatus } from './service.js';
export { emlTransport, smtpTransport, type MailTransport } from './transport.js';
export { UnsubscribeLinks } from './unsubscribe.js';
export { DEFAULT_WORKER_OPTIONS, OutboxWorker, type WorkerOptions } from './worker.js';
