-- Argo CD health of a LeaderWorkerSet (leaderworkerset.x-k8s.io/LeaderWorkerSet), by moegen.
-- Status fields: kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go
-- (observedGeneration, replicas, readyReplicas, updatedReplicas; conditions Available,
-- Progressing, UpdateInProgress). A group is ready when all its pods are ready.
local hs = {}
local st = obj.status
if st == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the LeaderWorkerSet controller"
  return hs
end
-- status.observedGeneration exists from LWS v0.9.0 (kubernetes-sigs/lws#807); v0.3-v0.8 never set
-- it, so there it cannot gate the health (the update counts below still do).
local generation = obj.metadata.generation
if generation ~= nil and st.observedGeneration ~= nil and st.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end
local want = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  want = obj.spec.replicas
end
local ready = st.readyReplicas or 0
local updated = st.updatedReplicas or 0
if st.conditions ~= nil then
  for _, c in ipairs(st.conditions) do
    if c.type == "UpdateInProgress" and c.status == "True" then
      hs.status = "Progressing"
      hs.message = "Rolling update: " .. updated .. " of " .. want .. " groups updated"
      return hs
    end
  end
end
if updated < want then
  hs.status = "Progressing"
  hs.message = updated .. " of " .. want .. " groups updated"
  return hs
end
if ready < want then
  hs.status = "Progressing"
  -- LWS's status has no restart or failure field (conditions Available, Progressing,
  -- UpdateInProgress only): a group loading its weights and one crash-looping look the same.
  hs.message = ready .. " of " .. want .. " groups ready (loading weights, or failing: the " ..
    "LeaderWorkerSet status cannot tell; see the pods, or the EngineGroupRestarts alert)"
  return hs
end
hs.status = "Healthy"
hs.message = ready .. " of " .. want .. " groups ready"
return hs
