// What a user fills in for server-everything's trigger-elicitation-request form (every field it asks for),
// and `confirm` for the SDK 2 test server's deploy tool.
export const FILLED_FORM = {
  confirm: true,
  name: 'Ada',
  check: true,
  firstLine: 'Once',
  email: 'ada@example.com',
  homepage: 'https://ada.example',
  birthdate: '1815-12-10',
  integer: 1,
  number: 1.5,
  enum: 'Red',
  untitledSingleSelectEnum: 'option1',
  titledSingleSelectEnum: 'value1',
  legacyTitledEnum: 'opt1',
  untitledMultipleSelectEnum: ['option1'],
  titledMultipleSelectEnum: ['value1'],
};
