//! `CUDA_VISIBLE_DEVICES` mapped onto the devices NVML lists, the way the CUDA driver reads it.
//!
//! - unset: every device; set but empty (or blank): none;
//! - a comma-separated list of entries, each a device index, a `GPU-` UUID or a unique prefix
//!   of one, a `MIG-` UUID, or the legacy `MIG-GPU-<uuid>/<gi>/<ci>`;
//! - the first entry that names no device ends the list: it and everything after it are
//!   ignored (so `-1` hides every GPU, and `0,7,1` on a two-GPU box shows only device 0);
//! - a device named twice is counted once.

use crate::snapshot::gpu::VisibleDevices;
use std::ffi::OsStr;

/// What the mapping needs to know about one device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceId {
    /// NVML index.
    pub index: u32,
    /// `GPU-…` UUID.
    pub uuid: String,
    /// Product name (only used to tell whether the devices differ).
    pub name: String,
    /// `MIG-…` UUIDs of its MIG devices.
    pub mig: Vec<String>,
}

/// Map `raw` (the variable's value, `None` when unset) onto `devices` (in NVML order).
/// `device_order` is `CUDA_DEVICE_ORDER`.
pub fn map(
    raw: Option<&OsStr>,
    device_order: Option<&str>,
    devices: &[DeviceId],
) -> VisibleDevices {
    let Some(raw) = raw else {
        return VisibleDevices {
            raw: None,
            visible: devices.iter().map(|d| d.index).collect(),
            ..Default::default()
        };
    };
    let text = raw.to_string_lossy().into_owned();
    let mut out = VisibleDevices {
        raw: Some(text.clone()),
        ..Default::default()
    };
    if text.trim().is_empty() {
        return out;
    }
    let entries: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut used_index = false;
    for (i, entry) in entries.iter().enumerate() {
        let found = if !entry.is_empty() && entry.bytes().all(|b| b.is_ascii_digit()) {
            used_index = true;
            entry
                .parse::<u64>()
                .ok()
                .and_then(|n| devices.get(usize::try_from(n).ok()?))
                .map(|d| d.index)
        } else {
            by_uuid(entry, devices)
        };
        match found {
            Some(idx) => {
                if !out.visible.contains(&idx) {
                    out.visible.push(idx);
                }
            }
            None => {
                out.unmatched.push(entry.to_string());
                out.ignored = entries[i + 1..].iter().map(|s| s.to_string()).collect();
                break;
            }
        }
    }
    let pci_order = device_order.is_some_and(|o| o.trim() == "PCI_BUS_ID");
    let all_alike = devices.windows(2).all(|w| w[0].name == w[1].name);
    out.order_uncertain = used_index && !pci_order && !all_alike;
    out
}

/// The index of the device a UUID entry names (case-insensitive, unique prefix for `GPU-`).
fn by_uuid(entry: &str, devices: &[DeviceId]) -> Option<u32> {
    let lower = entry.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("mig-") {
        if rest.starts_with("gpu-") {
            // Legacy MIG-GPU-<uuid>/<gi>/<ci>: the parent's UUID before the first '/'.
            let parent = rest.split('/').next().unwrap_or(rest);
            return devices
                .iter()
                .find(|d| d.uuid.to_ascii_lowercase() == parent && !d.mig.is_empty())
                .map(|d| d.index);
        }
        return devices
            .iter()
            .find(|d| d.mig.iter().any(|m| m.to_ascii_lowercase() == lower))
            .map(|d| d.index);
    }
    if lower.starts_with("gpu-") && lower.len() > 4 {
        let mut hits = devices
            .iter()
            .filter(|d| d.uuid.to_ascii_lowercase().starts_with(&lower));
        let first = hits.next()?;
        // An ambiguous prefix names no device.
        return hits.next().is_none().then_some(first.index);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices() -> Vec<DeviceId> {
        vec![
            DeviceId {
                index: 0,
                uuid: "GPU-11111111-2222-3333-4444-555555555555".into(),
                name: "NVIDIA H100 80GB HBM3".into(),
                mig: vec![],
            },
            DeviceId {
                index: 1,
                uuid: "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee".into(),
                name: "NVIDIA A100-SXM4-40GB".into(),
                mig: vec!["MIG-0f0e0d0c-0b0a-0908-0706-050403020100".into()],
            },
            DeviceId {
                index: 2,
                uuid: "GPU-11112222-0000-0000-0000-000000000000".into(),
                name: "NVIDIA H100 80GB HBM3".into(),
                mig: vec![],
            },
        ]
    }

    fn m(raw: Option<&str>) -> VisibleDevices {
        map(raw.map(OsStr::new), Some("PCI_BUS_ID"), &devices())
    }

    #[test]
    fn unset_shows_all_and_empty_shows_none() {
        assert_eq!(m(None).visible, vec![0, 1, 2]);
        assert_eq!(m(None).raw, None);
        let e = m(Some(""));
        assert!(e.visible.is_empty() && e.unmatched.is_empty());
        assert_eq!(e.raw.as_deref(), Some(""));
        assert!(m(Some("  ")).visible.is_empty());
    }

    #[test]
    fn indices_keep_cuda_order() {
        assert_eq!(m(Some("2,0")).visible, vec![2, 0]);
        assert_eq!(m(Some(" 1 , 0 ")).visible, vec![1, 0]);
        assert_eq!(m(Some("0,0,1")).visible, vec![0, 1]);
    }

    #[test]
    fn the_first_invalid_entry_ends_the_list() {
        let v = m(Some("0,7,1"));
        assert_eq!(v.visible, vec![0]);
        assert_eq!(v.unmatched, vec!["7"]);
        assert_eq!(v.ignored, vec!["1"]);
        let v = m(Some("-1"));
        assert!(v.visible.is_empty());
        assert_eq!(v.unmatched, vec!["-1"]);
        let v = m(Some("1,,2"));
        assert_eq!(v.visible, vec![1]);
        assert_eq!(v.unmatched, vec![""]);
        assert_eq!(v.ignored, vec!["2"]);
        assert_eq!(m(Some("cuda:0")).unmatched, vec!["cuda:0"]);
    }

    #[test]
    fn uuids_prefixes_and_mig() {
        assert_eq!(
            m(Some("GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee")).visible,
            vec![1]
        );
        assert_eq!(m(Some("gpu-AAAA")).visible, vec![1]);
        // `GPU-1111` is a prefix of two devices: ambiguous, so nothing.
        let v = m(Some("GPU-1111,1"));
        assert!(v.visible.is_empty());
        assert_eq!(v.unmatched, vec!["GPU-1111"]);
        assert_eq!(m(Some("GPU-111111")).visible, vec![0]);
        assert_eq!(
            m(Some("MIG-0f0e0d0c-0b0a-0908-0706-050403020100,0")).visible,
            vec![1, 0]
        );
        assert_eq!(
            m(Some("MIG-GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/1/0")).visible,
            vec![1]
        );
        assert_eq!(m(Some("MIG-deadbeef")).unmatched, vec!["MIG-deadbeef"]);
        assert_eq!(m(Some("GPU-")).unmatched, vec!["GPU-"]);
    }

    #[test]
    fn index_order_is_uncertain_without_pci_bus_id_on_mixed_boxes() {
        let d = devices();
        assert!(map(Some(OsStr::new("1")), None, &d).order_uncertain);
        assert!(!map(Some(OsStr::new("1")), Some("PCI_BUS_ID"), &d).order_uncertain);
        assert!(!map(Some(OsStr::new("GPU-aaaa")), None, &d).order_uncertain);
        let same = vec![
            d[0].clone(),
            DeviceId {
                index: 1,
                ..d[2].clone()
            },
        ];
        assert!(!map(Some(OsStr::new("1,0")), None, &same).order_uncertain);
    }
}
