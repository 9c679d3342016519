//! A stand-in for the `hashicorp/google` provider, served in-process and attached to terraform
//! with TF_REATTACH_PROVIDERS, so that `terraform validate` can check generated configurations
//! (attribute names, types, block nesting, references) offline. Its schemas are the subset of
//! google 7.45 that the generator emits (hashicorp/google 7.45).

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use locality::tfplugin::{
    serve_plaintext, Attribute, Block, Context, Diagnostics, DynamicDataSource, DynamicResource, NestedBlock, Nesting,
    Provider, Schema, Type, Value,
};

struct Google {
    compute: Option<super::fake_compute::FakeCompute>,
}

struct Fake {
    name: &'static str,
    block: Block,
    compute: Option<super::fake_compute::FakeCompute>,
}

fn id() -> Attribute {
    Attribute::string("id").computed().description("id")
}

fn single(name: &str, block: Block) -> NestedBlock {
    NestedBlock::new(name, Nesting::List, block).items(0, 1)
}

fn duration() -> Block {
    Block::new("duration")
        .attribute(Attribute::number("seconds").required())
        .attribute(Attribute::number("nanos").optional())
}

fn schemas() -> Vec<Fake> {
    let neg = Block::new("neg")
        .attribute(id())
        .attribute(Attribute::string("name").required())
        .attribute(Attribute::string("project").optional().computed())
        .attribute(Attribute::string("region").required())
        .attribute(Attribute::string("network_endpoint_type").optional())
        .attribute(Attribute::string("description").optional())
        .block(single(
            "cloud_run",
            Block::new("cloud_run")
                .attribute(Attribute::string("service").optional())
                .attribute(Attribute::string("tag").optional())
                .attribute(Attribute::string("url_mask").optional()),
        ));
    let mut outlier = Block::new("outlier")
        .block(single("base_ejection_time", duration()))
        .block(single("interval", duration()));
    for name in [
        "consecutive_errors",
        "consecutive_gateway_failure",
        "enforcing_consecutive_errors",
        "enforcing_consecutive_gateway_failure",
        "enforcing_success_rate",
        "max_ejection_percent",
        "success_rate_minimum_hosts",
        "success_rate_request_volume",
        "success_rate_stdev_factor",
    ] {
        outlier = outlier.attribute(Attribute::number(name).optional());
    }
    let backend_service = Block::new("bs")
        .attribute(id())
        .attribute(Attribute::string("name").required())
        .attribute(Attribute::string("project").optional().computed())
        .attribute(Attribute::string("protocol").optional().computed())
        .attribute(Attribute::string("load_balancing_scheme").optional())
        .attribute(Attribute::typed("health_checks", Type::set(Type::String)).optional())
        .block(NestedBlock::new(
            "backend",
            Nesting::Set,
            Block::new("backend")
                .attribute(Attribute::string("group").required())
                .attribute(Attribute::string("balancing_mode").optional())
                .attribute(Attribute::number("capacity_scaler").optional()),
        ))
        .block(single("outlier_detection", outlier));
    let url_map = Block::new("url_map")
        .attribute(id())
        .attribute(Attribute::string("name").required())
        .attribute(Attribute::string("project").optional().computed())
        .attribute(Attribute::string("description").optional())
        .attribute(Attribute::string("default_service").optional())
        .attribute(Attribute::string("fingerprint").computed())
        .block(single(
            "default_route_action",
            Block::new("route").block(NestedBlock::new(
                "weighted_backend_services",
                Nesting::List,
                Block::new("wbs")
                    .attribute(Attribute::string("backend_service").optional())
                    .attribute(Attribute::number("weight").optional()),
            )),
        ));
    vec![
        Fake {
            name: "google_compute_region_network_endpoint_group",
            block: neg,
            compute: None,
        },
        Fake {
            name: "google_compute_backend_service",
            block: backend_service,
            compute: None,
        },
        Fake {
            name: "google_compute_url_map",
            block: url_map,
            compute: None,
        },
    ]
}

#[async_trait]
impl Provider for Google {
    type Data = ();
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new("google").attribute(Attribute::string("project").optional()),
        }
    }
    async fn configure(&self, _: &Value, _: &str, _: &mut Diagnostics) -> Option<()> {
        Some(())
    }
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<()>>> {
        schemas()
            .into_iter()
            .map(|mut f| {
                f.compute = self.compute.clone();
                Arc::new(f) as Arc<dyn DynamicResource<()>>
            })
            .collect()
    }
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<()>>> {
        Vec::new()
    }
}

#[async_trait]
impl DynamicResource<()> for Fake {
    fn type_name(&self) -> &'static str {
        self.name
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: self.block.clone(),
        }
    }
    async fn read(&self, _: &Context<()>, state: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(state.clone())
    }
    async fn create(&self, _: &Context<()>, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        let mut state = planned.clone();
        let project = planned.get("project").as_str().unwrap_or("default-project").to_string();
        let name = planned.get("name").as_str().unwrap_or_default().to_string();
        let (collection, scope) = match self.name {
            "google_compute_region_network_endpoint_group" => (
                "networkEndpointGroups",
                format!("regions/{}", planned.get("region").as_str().unwrap_or_default()),
            ),
            "google_compute_backend_service" => ("backendServices", "global".to_string()),
            _ => ("urlMaps", "global".to_string()),
        };
        state.set("id", format!("projects/{project}/{scope}/{collection}/{name}").into());
        state.set("project", project.as_str().into());
        if state.get("protocol").is_unknown() {
            state.set("protocol", "HTTP".into());
        }
        if self.name == "google_compute_url_map" {
            state.set("fingerprint", "fp".into());
            // The URL map really exists afterwards, in the fake Compute API.
            if let Some(compute) = &self.compute {
                let route = planned
                    .get("default_route_action")
                    .elements()
                    .first()
                    .cloned()
                    .unwrap_or_default();
                let weights: Vec<(String, u32)> = route
                    .get("weighted_backend_services")
                    .elements()
                    .iter()
                    .map(|w| {
                        let bs = w.get("backend_service").as_str().unwrap_or_default();
                        let weight = w.get("weight").as_number().and_then(|n| n.as_u64()).unwrap_or(0) as u32;
                        (bs.rsplit('/').next().unwrap_or(bs).to_string(), weight)
                    })
                    .collect();
                let refs: Vec<(&str, u32)> = weights.iter().map(|(n, w)| (n.as_str(), *w)).collect();
                compute.put_url_map(&project, &name, &refs);
            }
        }
        Some(state)
    }
    async fn update(&self, _: &Context<()>, _: &Value, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(planned.clone())
    }
    async fn delete(&self, _: &Context<()>, _: &Value, _: &mut Diagnostics) {}
}

/// Starts the stand-in on 127.0.0.1 and returns the TF_REATTACH_PROVIDERS value for it.
pub async fn start() -> String {
    start_with(None).await
}

/// Like [`start`]; URL maps it creates are also created in `compute`.
pub async fn start_with(compute: Option<super::fake_compute::FakeCompute>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(serve_plaintext(Google { compute }, listener, Default::default()));
    serde_json::json!({
        "registry.terraform.io/hashicorp/google": {
            "Protocol": "grpc", "ProtocolVersion": 6, "Pid": std::process::id(), "Test": true,
            "Addr": {"Network": "tcp", "String": addr.to_string()}
        }
    })
    .to_string()
}
