package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxlab/handoff/system"
)

// lostReply is a receiver whose reply is lost after it acted: the task is
// created, and the sender hears a transient failure.
type lostReply struct{ system.Receiver }

func (r lostReply) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if _, err := r.Receiver.CreateTask(ctx, key, payload); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
}

// The lost-reply story: the receiver creates the task and the reply is
// lost; the retry sends the same key, and the receiver answers with the
// task it already holds. One task, whatever the network did.
func Example() {
	dir, err := os.MkdirTemp("", "handoff-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer crm.Close()

	key, err := app.RecordApproval(ctx, "case-104", "Call about the approved repair plan")
	fmt.Println(key, err)
	d, err := app.DeliverOne(ctx, lostReply{crm})
	fmt.Println(d.Result, d.LastError, d.Attempts, err)
	d, err = app.DeliverOne(ctx, crm)
	fmt.Println(d.Result, d.RemoteID, d.Attempts, err)
	d, err = app.DeliverOne(ctx, crm)
	fmt.Println(d.Result, err)
	tasks, err := crm.Tasks(ctx)
	fmt.Println(len(tasks), "task", err)
	// Output:
	// harbor:create-followup:v1:case-104 <nil>
	// pending transient 1 <nil>
	// sent 1 2 <nil>
	// idle <nil>
	// 1 task <nil>
}

// A person repairs a blocked row by key: here the receiver refused the
// request for good, the person fixed what it refused, and requeues the
// row, which goes out again under the same key. Every action is fenced
// and audited.
func ExampleOutbox_Requeue() {
	dir, err := os.MkdirTemp("", "handoff-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer crm.Close()

	key, _ := app.RecordApproval(ctx, "case-7", "Order the spare part")
	d, _ := app.DeliverOne(ctx, refusing{})
	fmt.Println(d.Result, d.LastError)
	err = app.Requeue(ctx, key, 0, "dana", "the CRM's field limit was raised")
	fmt.Println(err)
	d, _ = app.DeliverOne(ctx, crm)
	fmt.Println(d.Result, d.RemoteID)
	audit, _ := app.Audit(ctx)
	fmt.Println(audit[0].Actor, audit[0].Action, audit[0].Key)
	// Output:
	// blocked rejected
	// <nil>
	// sent 1
	// dana requeue harbor:create-followup:v1:case-7
}

// refusing is a receiver that refuses every request for good.
type refusing struct{}

func (refusing) CreateTask(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("%w: title too long for the CRM", system.ErrRejected)
}
