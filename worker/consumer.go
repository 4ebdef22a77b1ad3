package worker

import "github.com/jetflow/jetflow/taskconsumer"

// TaskPolicy is the delivery policy of the task consumers a worker
// creates itself (Config.CreateConsumers, for development). A deployment
// creates them with provision.EnsureTaskConsumer from the same
// taskconsumer.Policy, so both make the same consumer.
type TaskPolicy = taskconsumer.Policy

// Defaults of TaskPolicy.
const (
	DefaultStartToClose  = taskconsumer.DefaultStartToClose
	DefaultMaxAckPending = taskconsumer.DefaultMaxAckPending
	DefaultMaxDeliver    = taskconsumer.DefaultMaxDeliver
)
