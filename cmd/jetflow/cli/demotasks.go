package cli

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/jetflow/jetflow/worker"
)

// The demo's tasks: a small shop behind the order workflow's five task
// versions. Each is a plain Go SDK handler, as a real worker would be.

// demoItem is one catalogue entry; stock is what the warehouse holds, and
// a missing warehouse entry makes check-stock fail.
type demoItem struct {
	name  string
	price float64
	stock int
	known bool // the warehouse has a record of it
}

var demoCatalogue = map[string]demoItem{
	"KB-42":  {"mechanical keyboard", 29.99, 12, true},
	"MUG-7":  {"enamel mug", 9.50, 1, true},
	"MON-27": {"27-inch monitor", 189.00, 4, true},
	"LAMP-3": {"desk lamp", 39.90, 6, true},
	"DISC-9": {"discontinued headset", 59.00, 0, false},
}

// demoRisky are customers the fraud model distrusts.
var demoRisky = map[string]float64{"mallory": 0.93}

type orderLine struct {
	SKU string  `json:"sku"`
	Qty float64 `json:"qty"`
}

func checkStock(_ context.Context, inv worker.Invocation) (any, error) {
	var l orderLine
	if err := inv.DecodeWith(&l); err != nil {
		return nil, err
	}
	item, ok := demoCatalogue[l.SKU]
	if !ok || !item.known {
		// Asking again will not change the answer: fail for good.
		return nil, worker.WithCode("UNKNOWN_SKU", worker.NonRetryable(fmt.Errorf("the warehouse has no record of SKU %s", l.SKU)))
	}
	return map[string]any{"sku": l.SKU, "onHand": item.stock, "available": float64(item.stock) >= l.Qty}, nil
}

func quotePrice(_ context.Context, inv worker.Invocation) (any, error) {
	var l orderLine
	if err := inv.DecodeWith(&l); err != nil {
		return nil, err
	}
	item, ok := demoCatalogue[l.SKU]
	if !ok {
		return nil, worker.NonRetryable(fmt.Errorf("no price for SKU %s", l.SKU))
	}
	return map[string]any{"unit": item.price, "total": math.Round(item.price*l.Qty*100) / 100, "currency": "EUR"}, nil
}

func scoreFraud(_ context.Context, inv worker.Invocation) (any, error) {
	var in struct {
		Customer string `json:"customer"`
	}
	if err := inv.DecodeWith(&in); err != nil {
		return nil, err
	}
	score, ok := demoRisky[in.Customer]
	if !ok {
		// A small, stable score for everyone else.
		h := fnv.New32a()
		h.Write([]byte(in.Customer))
		score = float64(h.Sum32()%25) / 100
	}
	return map[string]any{"customer": in.Customer, "score": score}, nil
}

// errCarrier is the carrier's transient failure: ship's first attempt
// meets it, so the demo shows a retry.
var errCarrier = errors.New("carrier API timed out")

// demoUnverified are customers whose address the carrier has not verified
// when their first parcel comes: that attempt is refused for good, so the
// run fails, and a redrive (a later attempt) ships it. The README's tour
// redrives such a run.
var demoUnverified = map[string]bool{"zoe": true}

func ship(_ context.Context, inv worker.Invocation) (any, error) {
	var to struct {
		Order struct {
			Customer string `json:"customer"`
		} `json:"order"`
	}
	_ = inv.DecodeWith(&to) // the checks below read what is there
	if inv.Attempt == 1 && demoUnverified[to.Order.Customer] {
		return nil, worker.WithCode("ADDRESS_UNVERIFIED", worker.NonRetryable(fmt.Errorf("the carrier has not verified the address of customer %s yet", to.Order.Customer)))
	}
	if inv.Attempt == 1 {
		return nil, worker.WithCode("CARRIER_TIMEOUT", errCarrier)
	}
	// The order is in "with" when the workflow passes it, and in the
	// work input (the check's verdict) in any case.
	var with, input struct {
		Order *struct {
			SKU      string `json:"sku"`
			Customer string `json:"customer"`
		} `json:"order"`
	}
	if err := inv.DecodeWith(&with); err != nil {
		return nil, err
	}
	if err := inv.DecodeInput(&input); err != nil {
		return nil, err
	}
	order := with.Order
	if order == nil {
		order = input.Order
	}
	if order == nil {
		return nil, worker.NonRetryable(errors.New("ship needs the order, in \"with\" or in its input"))
	}
	h := fnv.New32a()
	h.Write([]byte(inv.IdempotencyKey())) // the same parcel however often it is retried
	return map[string]any{"carrier": "Parcelwise", "tracking": fmt.Sprintf("PW%08d", h.Sum32()%100000000), "to": order.Customer, "sku": order.SKU}, nil
}

func notify(_ context.Context, inv worker.Invocation) (any, error) {
	var shipment struct {
		Tracking string `json:"tracking"`
		To       string `json:"to"`
	}
	if err := inv.DecodeInput(&shipment); err != nil {
		return nil, err
	}
	return map[string]any{"notified": true, "channel": "email", "to": shipment.To, "tracking": shipment.Tracking}, nil
}

// demoTasks are the five tasks the order workflow invokes, each at
// version 1.
var demoTasks = []struct {
	name string
	h    worker.Handler
}{
	{"check-stock", checkStock},
	{"quote-price", quotePrice},
	{"score-fraud", scoreFraud},
	{"ship", ship},
	{"notify", notify},
}

// registerDemoTasks registers the five task versions the order workflow
// invokes.
func registerDemoTasks(w *worker.Worker) error {
	for _, t := range demoTasks {
		if err := w.Register(t.name, "1", t.h); err != nil {
			return err
		}
	}
	return nil
}
