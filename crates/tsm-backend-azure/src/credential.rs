//! Entra ID credentials, used when no account key, SAS token or connection string is set.
//!
//! `azure_identity` 1.0 has no `DefaultAzureCredential`, so the chain is chosen here from
//! the environment, once, when the backend is built:
//! 1. workload identity (AKS): `AZURE_FEDERATED_TOKEN_FILE` set (with `AZURE_CLIENT_ID`,
//!    `AZURE_TENANT_ID`);
//! 2. a service principal: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID` and `AZURE_CLIENT_SECRET`;
//! 3. managed identity (VM, App Service...), user-assigned when `AZURE_CLIENT_ID` is set.
//!
//! Tokens are fetched lazily and refreshed by the SDK's bearer-token policy; a failure
//! shows on the first request as an error of kind `Credential`. Entra ID needs an
//! `https://` endpoint (the SDK refuses to send tokens in clear).

use std::sync::Arc;

use azure_core::credentials::{Secret as SdkSecret, TokenCredential};
use azure_identity::{
    ClientSecretCredential, ManagedIdentityCredential, ManagedIdentityCredentialOptions,
    UserAssignedId, WorkloadIdentityCredential,
};
use tsm_storage::config::ConfigError;

use crate::config::ACCOUNT_KEY;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn err(what: &str, e: &azure_core::Error) -> ConfigError {
    ConfigError::new(
        format!("storage.{ACCOUNT_KEY}"),
        "<missing>",
        format!(
            "an account key, SAS token or connection string, or Entra ID: {what} could not \
             be set up: {}",
            crate::error::redact_sas(&e.to_string())
        ),
    )
}

/// The Entra ID credential for this process (see the module doc for the order).
pub fn entra_id() -> Result<(Arc<dyn TokenCredential>, &'static str), ConfigError> {
    if env("AZURE_FEDERATED_TOKEN_FILE").is_some() {
        let c = WorkloadIdentityCredential::new(None).map_err(|e| err("workload identity", &e))?;
        return Ok((c, "workload identity"));
    }
    if let (Some(tenant), Some(client), Some(secret)) = (
        env("AZURE_TENANT_ID"),
        env("AZURE_CLIENT_ID"),
        env("AZURE_CLIENT_SECRET"),
    ) {
        let c = ClientSecretCredential::new(&tenant, client, SdkSecret::new(secret), None)
            .map_err(|e| err("the environment's service principal", &e))?;
        return Ok((c, "service principal (environment)"));
    }
    let options = ManagedIdentityCredentialOptions {
        user_assigned_id: env("AZURE_CLIENT_ID").map(UserAssignedId::ClientId),
        ..Default::default()
    };
    let c =
        ManagedIdentityCredential::new(Some(options)).map_err(|e| err("managed identity", &e))?;
    Ok((c, "managed identity"))
}
