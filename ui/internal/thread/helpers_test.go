package thread_test

import "github.com/toolstream/toolstream/agent"

func agentUser(text string) agent.Message { return agent.UserText(text) }
