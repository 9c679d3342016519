//! A stand-in for the official `cloudflare/cloudflare` provider (v5.20+), served in-process and
//! attached with TF_REATTACH_PROVIDERS: only `cloudflare_origin_cloud_region` (schema version
//! 500: `zone_id`, `origin_ip`, `vendor`, `region`, `id`, `modified_on`), enough for Terraform
//! to load a state that holds it and to move it to `locality_region_hint`. It never talks to an
//! API; a test that reaches its create or delete fails.

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use locality::tfplugin::{
    serve_plaintext, Attribute, Block, Context, Diagnostics, DynamicDataSource, DynamicResource, Provider, Schema,
    Value,
};

struct Cloudflare;
struct OriginCloudRegion;

#[async_trait]
impl Provider for Cloudflare {
    type Data = ();
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new("cloudflare").attribute(Attribute::string("api_token").optional().sensitive()),
        }
    }
    async fn configure(&self, _: &Value, _: &str, _: &mut Diagnostics) -> Option<()> {
        Some(())
    }
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<()>>> {
        vec![Arc::new(OriginCloudRegion)]
    }
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<()>>> {
        Vec::new()
    }
}

#[async_trait]
impl DynamicResource<()> for OriginCloudRegion {
    fn type_name(&self) -> &'static str {
        "cloudflare_origin_cloud_region"
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 500,
            block: Block::new("An origin's cloud region (the official provider's resource).")
                .attribute(Attribute::string("zone_id").required())
                .attribute(Attribute::string("origin_ip").required())
                .attribute(Attribute::string("vendor").required())
                .attribute(Attribute::string("region").required())
                .attribute(Attribute::string("id").computed())
                .attribute(Attribute::string("modified_on").computed()),
        }
    }
    async fn read(&self, _: &Context<()>, state: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(state.clone())
    }
    async fn create(&self, _: &Context<()>, _: &Value, diags: &mut Diagnostics) -> Option<Value> {
        diags.error("stand-in", "the cloudflare stand-in does not create");
        None
    }
    async fn update(&self, _: &Context<()>, _: &Value, _: &Value, diags: &mut Diagnostics) -> Option<Value> {
        diags.error("stand-in", "the cloudflare stand-in does not update");
        None
    }
    async fn delete(&self, _: &Context<()>, _: &Value, diags: &mut Diagnostics) {
        diags.error("stand-in", "the cloudflare stand-in does not delete");
    }
}

/// Starts the stand-in on 127.0.0.1; the TF_REATTACH_PROVIDERS entry for it.
pub async fn start() -> (String, serde_json::Value) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(serve_plaintext(Cloudflare, listener, Default::default()));
    (
        "registry.terraform.io/cloudflare/cloudflare".to_string(),
        serde_json::json!({
            "Protocol": "grpc", "ProtocolVersion": 6, "Pid": std::process::id(), "Test": true,
            "Addr": {"Network": "tcp", "String": addr.to_string()}
        }),
    )
}
