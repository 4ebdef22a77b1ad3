package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/worker"
	"github.com/jetflow/jetflow/worker/workertest"
)

// ChargeInput is what the charge task receives as input.
type ChargeInput struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// charge is a task handler. It passes IdempotencyKey to the payment
// provider so that a retried or redelivered attempt charges once.
func charge(ctx context.Context, inv worker.Invocation) (any, error) {
	var in ChargeInput
	if err := inv.DecodeInput(&in); err != nil {
		return nil, err // non-retryable: the input will not change
	}
	if in.Amount <= 0 {
		return nil, worker.WithCode("INVALID_AMOUNT", worker.NonRetryable(fmt.Errorf("amount %d is not positive", in.Amount)))
	}
	return map[string]any{"order": in.Order, "charged": in.Amount, "receipt": "rcpt-" + in.Order}, nil
}

// A handler is tested without a server through package workertest; in a
// test function, workertest.Invoke(t, charge, input, with) does the same
// with Go values.
func Example_testingAHandler() {
	ctx := context.Background()
	out, err := workertest.Run(ctx, charge, worker.Invocation{Input: json.RawMessage(`{"order":"o-7","amount":250}`)})
	fmt.Println(string(out), err)

	_, err = workertest.Run(ctx, charge, worker.Invocation{Input: json.RawMessage(`{"order":"o-8"}`)})
	fmt.Printf("%+v\n", *worker.WireError(err)) // what the workflow receives
	// Output:
	// {"charged":250,"order":"o-7","receipt":"rcpt-o-7"} <nil>
	// {Message:amount 0 is not positive Code:INVALID_AMOUNT NonRetryable:true RetryAfterMs:0 CloseTask:false}
}

// Serving tasks: connect, register, start, and drain on a signal.
func ExampleWorker() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(js, worker.Config{Concurrency: 8})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Register("charge", "1.0", charge); err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
	// Finish what is running; after 30s cancel it and hand it back.
	drain, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Stop(drain); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Print(err)
	}
}
