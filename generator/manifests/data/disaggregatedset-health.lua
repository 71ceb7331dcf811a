-- Argo CD health of a DisaggregatedSet (disaggregatedset.x-k8s.io/DisaggregatedSet), by moegen.
-- Status fields: kubernetes-sigs/lws api/disaggregatedset/v1/disaggregatedset_types.go
-- (observedGeneration; roleStatuses[] name, replicas, readyReplicas, updatedReplicas;
-- conditions Available, Progressing, Degraded). Healthy when every role's groups are updated
-- and ready and the set is Available at the current generation.
local hs = {}
local st = obj.status
if st == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the DisaggregatedSet controller"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (st.observedGeneration == nil or st.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end
local conditions = {}
if st.conditions ~= nil then
  for _, c in ipairs(st.conditions) do
    conditions[c.type] = c
  end
end
local degraded = conditions["Degraded"]
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = degraded.message or "Degraded"
  return hs
end
local roles = {}
if st.roleStatuses ~= nil then
  for _, r in ipairs(st.roleStatuses) do
    roles[r.name] = r
  end
end
if obj.spec ~= nil and obj.spec.roles ~= nil then
  for _, role in ipairs(obj.spec.roles) do
    local r = roles[role.name]
    if r == nil then
      hs.status = "Progressing"
      hs.message = "Waiting for role " .. role.name
      return hs
    end
    local want = r.replicas or 0
    if (r.updatedReplicas or 0) < want then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. (r.updatedReplicas or 0) .. " of " .. want .. " groups updated"
      return hs
    end
    if (r.readyReplicas or 0) < want then
      hs.status = "Progressing"
      hs.message = role.name .. ": " .. (r.readyReplicas or 0) .. " of " .. want .. " groups ready (engines load their weights)"
      return hs
    end
  end
end
local progressing = conditions["Progressing"]
if progressing ~= nil and progressing.status == "True" then
  hs.status = "Progressing"
  hs.message = progressing.message or "Rolling out"
  return hs
end
local available = conditions["Available"]
if available == nil or available.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "Waiting for the DisaggregatedSet to be Available"
  return hs
end
hs.status = "Healthy"
hs.message = "All roles updated and ready"
return hs
