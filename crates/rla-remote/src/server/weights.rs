//! The server's weight routes: new weights from disk, LoRA adapters loaded and unloaded under
//! their names, and the models it serves.

use super::*;

#[derive(serde::Deserialize)]
pub(super) struct UpdateWeights {
    model_path: String,
}

pub(super) fn update_weights<S: Sampler>(
    state: &State<S>,
    body: &[u8],
) -> Result<serde_json::Value, Reply> {
    let r: UpdateWeights = parse(body)?;
    let Some(load) = &state.loaders.weights else {
        return Err(bad("this server cannot load weights", None));
    };
    // loaded outside the lock, swapped in between requests
    let base = load(Path::new(&r.model_path))
        .map_err(|e| bad(format!("loading {}: {e}", r.model_path), Some("model_path")))?;
    // the adapters again, on the new base
    let folders: Vec<(String, PathBuf)> = {
        let m = state.models.read().unwrap_or_else(|e| e.into_inner());
        m.adapters
            .iter()
            .map(|(k, (p, _))| (k.clone(), p.clone()))
            .collect()
    };
    let mut adapters = BTreeMap::new();
    if let Some(al) = &state.loaders.adapter {
        for (name, path) in folders {
            match al(&base, &path) {
                Ok(a) => {
                    adapters.insert(name, (path, a));
                }
                Err(e) => {
                    tracing::warn!(adapter = %name, error = %e, "an adapter did not load on the new weights; it is dropped")
                }
            }
        }
    }
    // (requests hold the read side throughout, so this waits for those under way)
    *state.models.write().unwrap_or_else(|e| e.into_inner()) = Models { base, adapters };
    tracing::info!(path = %r.model_path, "weights updated");
    Ok(serde_json::json!({"success": true, "message": format!("loaded {}", r.model_path)}))
}

pub(super) fn adapter_name<S>(state: &State<S>, name: &str) -> Result<(), Reply> {
    if name.is_empty() || name == state.name {
        return Err(bad(
            format!(
                "an adapter needs a name of its own (not empty, not the base model's `{}`)",
                state.name
            ),
            Some("lora_name"),
        ));
    }
    Ok(())
}

/// Loads (or, under a name already loaded, replaces) an adapter.
pub(super) fn load_adapter<S: Sampler>(
    state: &State<S>,
    body: &[u8],
) -> Result<serde_json::Value, Reply> {
    let r: LoadAdapter = parse(body)?;
    adapter_name(state, &r.lora_name)?;
    let Some(load) = &state.loaders.adapter else {
        return Err(bad("this server cannot load LoRA adapters", None));
    };
    let path = PathBuf::from(&r.lora_path);
    let adapted = {
        let m = state.models.read().unwrap_or_else(|e| e.into_inner());
        load(&m.base, &path)
            .map_err(|e| bad(format!("loading {}: {e}", r.lora_path), Some("lora_path")))?
    };
    state
        .models
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .adapters
        .insert(r.lora_name.clone(), (path, adapted));
    tracing::info!(adapter = %r.lora_name, path = %r.lora_path, "adapter loaded");
    Ok(serde_json::json!({
        "success": true,
        "message": format!("Success: LoRA adapter '{}' added successfully.", r.lora_name)
    }))
}

pub(super) fn unload_adapter<S: Sampler>(
    state: &State<S>,
    body: &[u8],
) -> Result<serde_json::Value, Reply> {
    let r: UnloadAdapter = parse(body)?;
    adapter_name(state, &r.lora_name)?;
    let gone = state
        .models
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .adapters
        .remove(&r.lora_name);
    match gone {
        Some(_) => Ok(serde_json::json!({
            "success": true,
            "message": format!("Success: LoRA adapter '{}' removed successfully.", r.lora_name)
        })),
        None => Err(Reply {
            status: 404,
            kind: "not_found_error",
            message: format!("no adapter `{}` is loaded", r.lora_name),
            param: Some("lora_name"),
        }),
    }
}

/// `/v1/models`: the base model and its adapters.
pub(super) fn models<S>(state: &State<S>) -> serde_json::Value {
    list(
        state,
        &state.models.read().unwrap_or_else(|e| e.into_inner()),
    )
}

/// [`models`] if the models can be read without waiting (no new weights are being swapped in).
pub(super) fn models_now<S>(state: &State<S>) -> Option<serde_json::Value> {
    match state.models.try_read() {
        Ok(m) => Some(list(state, &m)),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(list(state, &e.into_inner())),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

fn list<S>(state: &State<S>, m: &Models<S>) -> serde_json::Value {
    let card = |id: &str, parent: Option<String>, root: Option<String>| ModelCard {
        id: id.to_string(),
        object: "model".into(),
        created: now(),
        owned_by: "rlanything".into(),
        parent,
        root,
    };
    let mut data = vec![card(&state.name, None, None)];
    for (k, (p, _)) in &m.adapters {
        data.push(card(
            k,
            Some(state.name.clone()),
            Some(p.to_string_lossy().into_owned()),
        ));
    }
    serde_json::to_value(ModelList {
        object: "list".into(),
        data,
    })
    .expect("serialisable")
}
