//! The built-in cloud region catalogue: the region names Cloudflare's origin cloud-region hints
//! take, per vendor, and which Google Cloud regions run Cloud Run (the generator's check). A
//! leaf: imports nothing but `crate::naming`; the provider, the generator and the IP ranges use it.
//! Names come from the clouds' published IP-range files of 2026-10-26 (the same files the
//! built-in snapshot, `src/ranges/snapshot.bin`, was built from). Azure uses ARM names (`japaneast`); the short aliases
//! some Service Tags use are mapped by [`azure_arm_name`]. Used offline at plan time, with
//! "did you mean" suggestions; apply time checks the zone's `supported_regions` too.

/// The vendors Cloudflare accepts, as it spells them.
pub const VENDORS: [&str; 4] = ["aws", "azure", "gcp", "oci"];

/// The catalogue's date.
pub const CATALOGUE_DATE: &str = "2026-10-26";

/// AWS regions.
pub const AWS: [&str; 42] = [
    "af-south-1",
    "ap-east-1",
    "ap-east-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "cn-north-1",
    "cn-northwest-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eusc-de-east-1",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "me-west-1",
    "mx-central-1",
    "sa-east-1",
    "sa-west-1",
    "us-east-1",
    "us-east-2",
    "us-gov-east-1",
    "us-gov-west-1",
    "us-south-1",
    "us-west-1",
    "us-west-2",
];

/// Google Cloud regions.
pub const GCP: [&str; 47] = [
    "africa-south1",
    "asia-east1",
    "asia-east2",
    "asia-northeast1",
    "asia-northeast2",
    "asia-northeast3",
    "asia-south1",
    "asia-south2",
    "asia-southeast1",
    "asia-southeast2",
    "asia-southeast3",
    "australia-southeast1",
    "australia-southeast2",
    "europe-central2",
    "europe-north1",
    "europe-north2",
    "europe-southwest1",
    "europe-west1",
    "europe-west10",
    "europe-west12",
    "europe-west15",
    "europe-west2",
    "europe-west3",
    "europe-west4",
    "europe-west6",
    "europe-west8",
    "europe-west9",
    "me-central1",
    "me-central2",
    "me-west1",
    "northamerica-northeast1",
    "northamerica-northeast2",
    "northamerica-south1",
    "southamerica-east1",
    "southamerica-west1",
    "us-central1",
    "us-central2",
    "us-east1",
    "us-east4",
    "us-east5",
    "us-east7",
    "us-south1",
    "us-west1",
    "us-west2",
    "us-west3",
    "us-west4",
    "us-west8",
];

/// Azure regions (ARM names).
pub const AZURE: [&str; 73] = [
    "australiacentral",
    "australiacentral2",
    "australiaeast",
    "australiasoutheast",
    "austriaeast",
    "belgiumcentral",
    "brazilne",
    "brazilsouth",
    "brazilsoutheast",
    "canadacentral",
    "canadaeast",
    "centralindia",
    "centralus",
    "chilecentral",
    "denmarkeast",
    "eastasia",
    "eastus",
    "eastus2",
    "eastus3",
    "francecentral",
    "francesouth",
    "germanynorth",
    "germanywestcentral",
    "indiasouthcentral",
    "indonesiacentral",
    "israelcentral",
    "israelnorthwest",
    "italynorth",
    "japaneast",
    "japanwest",
    "jioindiacentral",
    "jioindiawest",
    "koreacentral",
    "koreasouth",
    "malaysiasouth",
    "malaysiawest",
    "mexicocentral",
    "newzealandnorth",
    "northcentralus",
    "northeastus5",
    "northeurope",
    "northeurope2",
    "norwayeast",
    "norwaywest",
    "polandcentral",
    "qatarcentral",
    "southafricanorth",
    "southafricawest",
    "southcentralus",
    "southcentralus2",
    "southeastasia",
    "southeastus",
    "southeastus3",
    "southeastus5",
    "southindia",
    "southwestus",
    "spaincentral",
    "swedencentral",
    "swedensouth",
    "switzerlandnorth",
    "switzerlandwest",
    "taiwannorth",
    "taiwannorthwest",
    "uaecentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westindia",
    "westus",
    "westus2",
    "westus3",
];

/// Oracle Cloud Infrastructure regions.
pub const OCI: [&str; 56] = [
    "af-casablanca-1",
    "af-johannesburg-1",
    "ap-batam-1",
    "ap-chuncheon-1",
    "ap-delhi-1",
    "ap-hyderabad-1",
    "ap-kulai-1",
    "ap-melbourne-1",
    "ap-mumbai-1",
    "ap-osaka-1",
    "ap-seoul-1",
    "ap-singapore-1",
    "ap-singapore-2",
    "ap-sydney-1",
    "ap-tokyo-1",
    "ca-montreal-1",
    "ca-toronto-1",
    "eu-amsterdam-1",
    "eu-dublin-3",
    "eu-frankfurt-1",
    "eu-jovanovac-1",
    "eu-madrid-1",
    "eu-madrid-3",
    "eu-marseille-1",
    "eu-milan-1",
    "eu-paris-1",
    "eu-stockholm-1",
    "eu-zurich-1",
    "il-jerusalem-1",
    "me-abudhabi-1",
    "me-dubai-1",
    "me-jeddah-1",
    "me-riyadh-1",
    "mx-monterrey-1",
    "mx-queretaro-1",
    "sa-bogota-1",
    "sa-riodejaneiro-2",
    "sa-santiago-1",
    "sa-saopaulo-1",
    "sa-valparaiso-1",
    "sa-vinhedo-1",
    "uk-cardiff-1",
    "uk-london-1",
    "us-abilene-1",
    "us-ashburn-1",
    "us-boardman-1",
    "us-chicago-1",
    "us-dallas-1",
    "us-desmoines-1",
    "us-lenexa-1",
    "us-phoenix-1",
    "us-quincy-1",
    "us-saltlake-2",
    "us-sanantonio-1",
    "us-sanjose-1",
    "us-shawnee-1",
];

/// Google Cloud regions without Cloud Run (serverless NEGs need it), per Google's Cloud Run
/// locations page.
pub const GCP_WITHOUT_CLOUD_RUN: [&str; 5] = [
    "asia-southeast3",
    "europe-west15",
    "us-central2",
    "us-east7",
    "us-west8",
];

/// The Google Cloud regions where Cloud Run services (and so serverless NEGs) can live.
pub fn cloud_run_locations() -> impl Iterator<Item = &'static str> + Clone {
    GCP.iter().copied().filter(|r| !GCP_WITHOUT_CLOUD_RUN.contains(r))
}

/// The regions of a vendor (lowercase vendor name), or `None` for an unknown vendor.
pub fn regions(vendor: &str) -> Option<&'static [&'static str]> {
    match vendor {
        "aws" => Some(&AWS),
        "azure" => Some(&AZURE),
        "gcp" => Some(&GCP),
        "oci" => Some(&OCI),
        _ => None,
    }
}

/// A vendor's region, for sentences, with its article: `an AWS region`, `a Google Cloud
/// region`, `an Azure region`, `an Oracle Cloud region` (the vendors' own names); an unknown
/// vendor's name is quoted as given.
pub fn a_region_of(vendor: &str) -> String {
    match vendor {
        "aws" => "an AWS region".to_string(),
        "azure" => "an Azure region".to_string(),
        "gcp" => "a Google Cloud region".to_string(),
        "oci" => "an Oracle Cloud region".to_string(),
        other => format!("a region of {other:?}"),
    }
}

/// The ARM name for an Azure Service Tags region alias (`germanywc` → `germanywestcentral`);
/// other names are returned unchanged.
pub fn azure_arm_name(region: &str) -> &str {
    match region {
        "brazilse" => "brazilsoutheast",
        "centralfrance" => "francecentral",
        "chilec" => "chilecentral",
        "germanyn" => "germanynorth",
        "germanywc" => "germanywestcentral",
        "norwaye" => "norwayeast",
        "norwayw" => "norwaywest",
        "southfrance" => "francesouth",
        "switzerlandn" => "switzerlandnorth",
        "switzerlandw" => "switzerlandwest",
        other => other,
    }
}

/// Up to three names from `candidates` closest to `word` (edit distance), best first.
pub fn near_matches<'a>(word: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    if word.len() > crate::naming::MAX_SUGGESTION_INPUT {
        return Vec::new();
    }
    let word = word.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .map(|c| (crate::naming::edit_distance(&word, c), *c))
        .filter(|(d, c)| *d <= 3.max(c.len() / 3) || c.contains(word.as_str()))
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_named_with_the_vendors_names_and_articles() {
        assert_eq!(a_region_of("aws"), "an AWS region");
        assert_eq!(a_region_of("gcp"), "a Google Cloud region");
        assert_eq!(a_region_of("azure"), "an Azure region");
        assert_eq!(a_region_of("oci"), "an Oracle Cloud region");
    }

    #[test]
    fn catalogue() {
        assert!(AWS.contains(&"ap-northeast-1") && !AWS.contains(&"GLOBAL"));
        assert!(GCP.contains(&"asia-northeast1") && !GCP.contains(&"global"));
        assert!(AZURE.contains(&"germanywestcentral") && !AZURE.contains(&"germanywc"));
        assert!(OCI.contains(&"ap-tokyo-1"));
        assert_eq!(azure_arm_name("centralfrance"), "francecentral");
        assert_eq!(near_matches("ap-northeast-9", &AWS)[0], "ap-northeast-1");
        assert_eq!(near_matches("asia-northeast-1", &GCP)[0], "asia-northeast1");
        assert_eq!(cloud_run_locations().count(), 42);
        // Issue 11: a 1 MiB region kept validation busy for seconds in this search.
        let started = std::time::Instant::now();
        assert!(near_matches(&"a".repeat(1 << 20), &AWS).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert!(GCP_WITHOUT_CLOUD_RUN.iter().all(|r| GCP.contains(r)));
        assert!(cloud_run_locations().any(|r| r == "asia-northeast2"));
    }
}
