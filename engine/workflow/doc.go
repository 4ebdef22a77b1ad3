// Package workflow lowers and compiles jaren-workflow 0.2 documents
// (WORKFLOW-FORMAT.md of @jarenjs/flow 0.91.4): Lower turns a document into
// one jaren-fsm 0.2 statechart for control plus one jaren-dag document per
// work state, byte-for-byte as the reference's lowerWorkflow; Compile adds
// what compileWorkflow fixes before a run (the compiled chart, DAGs and
// input queries, the content revisions, the task versions and the run
// identity). Running a workflow is engine/run's business.
package workflow
