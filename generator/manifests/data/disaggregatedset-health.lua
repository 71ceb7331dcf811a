-- Argo CD health of a DisaggregatedSet (disaggregatedset.x-k8s.io/DisaggregatedSet), by moegen.
-- Status fields: kubernetes-sigs/lws api/disaggregatedset/v1/disaggregatedset_types.go.
-- LWS v0.9 writes no status (lws#868); observedGeneration and roleStatuses[] (name, replicas,
-- readyReplicas, updatedReplicas) come with lws#933 (v0.10), the Available and Progressing
-- conditions with lws#980. The check uses Available when the controller sets it; otherwise a
-- role is done when its wanted groups (spec.roles[].spec.replicas, default 1, times
-- spec.slices) are all updated and ready and no group of an older revision is left.
local hs = {}
local st = obj.status or {}
local conditions = {}
local reported = st.observedGeneration ~= nil or st.roleStatuses ~= nil
if st.conditions ~= nil then
  for _, c in ipairs(st.conditions) do
    conditions[c.type] = c
    reported = true
  end
end
if not reported then
  hs.status = "Healthy"
  hs.message = "The controller reports no status (LWS < 0.10): check the LeaderWorkerSets it created"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (st.observedGeneration or 0) < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end
local degraded = conditions["Degraded"]
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = degraded.message or "Degraded"
  return hs
end
local available = conditions["Available"]
if available ~= nil then
  if available.status == "True" then
    hs.status = "Healthy"
    hs.message = "All roles updated and ready (Available)"
    return hs
  end
  local progressing = conditions["Progressing"]
  hs.status = "Progressing"
  hs.message = (progressing ~= nil and progressing.message) or available.message or "Not Available yet"
  return hs
end
local roles = {}
if st.roleStatuses ~= nil then
  for _, r in ipairs(st.roleStatuses) do
    roles[r.name] = r
  end
end
local slices = 1
if obj.spec ~= nil and obj.spec.slices ~= nil then
  slices = obj.spec.slices
end
if obj.spec ~= nil and obj.spec.roles ~= nil then
  for _, role in ipairs(obj.spec.roles) do
    local r = roles[role.name]
    local external = role.subRoles ~= nil or (role.scaling ~= nil and role.scaling.mode == "External")
    local want = 1
    if role.spec ~= nil and role.spec.replicas ~= nil then
      want = role.spec.replicas
    end
    want = want * slices
    if r == nil then
      if external or want > 0 then
        hs.status = "Progressing"
        hs.message = "Waiting for role " .. role.name
        return hs
      end
      r = {}
    end
    local replicas = r.replicas or 0
    local ready = r.readyReplicas or 0
    local updated = r.updatedReplicas or 0
    if external then
      -- the target comes from sub-roles or a scaler: the controller's count stands for it
      want = replicas
    end
    if updated < want then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. updated .. " of " .. want .. " groups updated"
      return hs
    end
    if ready < want then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. ready .. " of " .. want .. " groups ready (engines load their weights)"
      return hs
    end
    if replicas > updated then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. (replicas - updated) .. " groups of an older revision left"
      return hs
    end
    if replicas > want then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. replicas .. " groups, " .. want .. " wanted"
      return hs
    end
  end
end
hs.status = "Healthy"
hs.message = "All roles updated and ready"
return hs
