/**
 * Every Console act that leaves an audit row (spec 2.3, 6): `agent_id` `operator`, decision allow,
 * outcome ok or error, one row per act. The acts spec 6 lists as leaving none (key events, sector and
 * deadline edits, a connection's sync window, the operator's own reads) are not here on purpose.
 * Args of these rows never carry a credential, an OAuth code or state, an access URL or a password.
 */
export const CONSOLE_ACTS = {
  createConnection: 'create_connection',
  renameConnection: 'rename_connection',
  pauseConnection: 'pause_connection',
  resumeConnection: 'resume_connection',
  removeConnection: 'remove_connection',
  syncConnection: 'sync_connection',
  setSyncInterval: 'set_sync_interval',
  rotateIngestSecret: 'rotate_ingest_secret',
  replaceCredentials: 'replace_credentials',
  /** One row when a provider sign-in ends, completed or refused. */
  signIn: 'sign_in',
  saveProviderApp: 'save_provider_app',
  setPublicOrigin: 'set_public_origin',
  setTimeZone: 'set_time_zone',
  fetchLive: 'fetch_live',
  export: 'export',
  /** The operator's answer to a finance account match: "same account" or "keep separate". */
  answerAccountMatch: 'answer_account_match',
  /** The connection check (issue 32): the connector's steps run against the source; nothing cached. */
  checkConnection: 'check_connection',
  /** Where alerts are sent (issue 41): saved or removed; the row's args say only whether one is set and its kind. */
  setAlertDestination: 'set_alert_destination',
  /** Alerts marked seen (issue 41): one alert by id, or all; a Console act like any other write. */
  acknowledgeAlerts: 'acknowledge_alerts',
} as const;

export type ConsoleAct = (typeof CONSOLE_ACTS)[keyof typeof CONSOLE_ACTS];
