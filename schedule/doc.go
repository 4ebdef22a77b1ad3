// Package schedule holds jetflow's schedules (docs/SCHEDULES.md): runs of
// a deployed workflow started at cron times or fixed intervals. The
// server fires them: each schedule is a JetStream message schedule in
// the schedule stream, and no jetflow process keeps a timer. Store
// creates, lists, pauses, resumes, triggers and deletes schedules; every
// dispatcher runs a Runner, which takes each fire from the stream's
// durable consumer and starts the fire's run, under an id derived from
// the schedule's name and the fire time, after judging it against the
// schedule's catch-up and overlap policies.
package schedule
