package server

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// apiError is an OpenAI-shaped error: {"error": {...}}.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	var p any
	if param != "" {
		p = param
	}
	return &apiError{Status: 400, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error", Param: p}
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// samplingFields are the request fields shared by completions and chat.
type samplingFields struct {
	Model               string             `json:"model"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`
	Seed                *int64             `json:"seed"`
	Stop                json.RawMessage    `json:"stop"`
	StopTokenIDs        []int              `json:"stop_token_ids"`
	N                   *int               `json:"n"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	Stream              bool               `json:"stream"`
	StreamOptions       *StreamOptions     `json:"stream_options"`
	User                string             `json:"user"`
	IgnoreEOS           bool               `json:"ignore_eos"`
	MinTokens           int                `json:"min_tokens"`
	ReturnTokenIDs      bool               `json:"return_token_ids"`
	ResponseFormat      json.RawMessage    `json:"response_format"`
	CacheSalt           string             `json:"cache_salt"`
	AllowedTokenIDs     []int              `json:"allowed_token_ids"`
	BadWords            []string           `json:"bad_words"`
	SkipSpecialTokens   *bool              `json:"skip_special_tokens"`
	PromptLogprobs      *int               `json:"prompt_logprobs"`
	// vLLM's: keep a matched stop string in the text; keep only the
	// prompt's last k tokens (-1: the context length).
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output"`
	TruncatePromptTokens   *int `json:"truncate_prompt_tokens"`
	structuredFields

	// maxTokensField names max_tokens in errors, for routes that call it
	// otherwise (max_output_tokens).
	maxTokensField string
	// scorePrompt asks the engine for the prompt's logprobs, with
	// promptTop alternatives each (prompt_logprobs, or completions' echo,
	// which allows max_tokens 0).
	scorePrompt bool
	promptTop   int
	echo        bool
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	Logprobs *int            `json:"logprobs"`
	BestOf   *int            `json:"best_of"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages            json.RawMessage   `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	// ContinueFinalMessage (vLLM's) leaves the last message open for the
	// model to continue: a prefilled answer.
	ContinueFinalMessage bool `json:"continue_final_message"`
	// ReasoningEffort is OpenAI's; "none" turns the template's thinking
	// off, as the Responses route's reasoning.effort does.
	ReasoningEffort *string `json:"reasoning_effort"`
	// Echo (vLLM's) starts the answer with the final message's text when
	// that message is the assistant's: the prefill continued.
	Echo bool `json:"echo"`
	// Modalities with "audio" needs a speech model beside the LLM (Both).
	Modalities []string `json:"modalities"`
}

// usage is the token accounting of a response.
type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails *promptDetail `json:"prompt_tokens_details,omitempty"`
}

type promptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// completionLogprobs is the legacy completions logprobs object.
// An echoed prompt's first token has no logprob: null in both lists.
type completionLogprobs struct {
	Tokens        []string    `json:"tokens"`
	TokenLogprobs []*float32  `json:"token_logprobs"`
	TopLogprobs   []topByText `json:"top_logprobs"`
	TextOffset    []int       `json:"text_offset"`
}

// topByText is one position's alternatives as the legacy API's object of
// text to logprob, most likely first as OpenAI lists them (a Go map would
// sort the texts instead), then the chosen token where it is not among
// them; nil is null. Of two tokens with the same text the first is kept.
type topByText []textLogprob

type textLogprob struct {
	text    string
	logprob float32
}

func (t topByText) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("null"), nil
	}
	return marshalOrdered(len(t), func(i int) (string, any) { return t[i].text, t[i].logprob })
}

// wireLogprob is a logprob as a response carries it: vLLM's floor of -9999
// stands for the -inf of a token a constraint ruled out (and for a NaN),
// which JSON cannot hold.
func wireLogprob(v float32) float32 {
	if !(v > -9999) {
		return -9999
	}
	return v
}

type completionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason,omitempty"`
	TokenIDs       []int               `json:"token_ids,omitempty"`
	PromptTokenIDs []int               `json:"prompt_token_ids,omitempty"`
	PromptLogprobs promptLogprobs      `json:"prompt_logprobs,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

// chatLogprob is one entry of choices[].logprobs.content.
type chatLogprob struct {
	Token       string        `json:"token"`
	Logprob     float32       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []chatTopProb `json:"top_logprobs"`
}

type chatTopProb struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatLogprobs struct {
	Content []chatLogprob `json:"content"`
	Refusal []chatLogprob `json:"refusal"` // always null; OpenAI sends the key
}

type toolCallOut struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatMessageOut is a streamed delta: only what the chunk adds.
type chatMessageOut struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
	Audio            *audioDelta   `json:"audio,omitempty"`
}

// audioDelta is a streamed piece of a spoken answer (OpenAI's delta.audio):
// its id first, then transcript text and base64 PCM as they come, and
// expires_at last.
type audioDelta struct {
	ID         string `json:"id,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	Data       string `json:"data,omitempty"`
	ExpiresAt  int64  `json:"expires_at,omitempty"`
}

// chatMessage is a whole response message: content and refusal are
// always present (null when there is none), as OpenAI sends them and
// strict clients expect.
type chatMessage struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	Refusal          *string       `json:"refusal"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessage    `json:"message,omitempty"`
	Delta        *chatMessageOut `json:"delta,omitempty"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   any             `json:"stop_reason,omitempty"`
	TokenIDs     []int           `json:"token_ids,omitempty"`
}

type chatResponse struct {
	ID             string         `json:"id"`
	Object         string         `json:"object"`
	Created        int64          `json:"created"`
	Model          string         `json:"model"`
	Choices        []chatChoice   `json:"choices"`
	Usage          *usage         `json:"usage,omitempty"`
	PromptTokenIDs []int          `json:"prompt_token_ids,omitempty"`
	PromptLogprobs promptLogprobs `json:"prompt_logprobs,omitempty"`
}

// promptLogprobs is vLLM's prompt_logprobs: per prompt token, null for the
// first, then an object of token id to its score, the prompt's token
// first and then the most likely ones.
type promptLogprobs []promptScores

type promptScores []promptScore

type promptScore struct {
	id           int
	Logprob      float32 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

func (p promptScores) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("null"), nil
	}
	return marshalOrdered(len(p), func(i int) (string, any) { return strconv.Itoa(p[i].id), p[i] })
}

// marshalOrdered is a JSON object of n entries in their order, a key seen
// before skipped.
func marshalOrdered(n int, entry func(i int) (string, any)) ([]byte, error) {
	b := []byte{'{'}
	seen := make(map[string]bool, n)
	for i := range n {
		key, val := entry(i)
		if seen[key] {
			continue
		}
		seen[key] = true
		k, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}
